package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/client"
)

const runSynopsis = `sbx run [flags] [--] CMD [ARGS...]

Creates a sandbox, runs CMD in it with its output streamed live, removes the
sandbox and exits with CMD's exit code. A single CMD argument is a shell
command (run with bash -l -c); several are executed directly.

exit codes: CMD's own; 125 if sbx or the sandbox failed; 137 if CMD was
killed by a signal; 130 if interrupted; 2 for bad usage`

// runOpts are the parsed flags of sbx run.
type runOpts struct {
	cf       clientFlags
	runtime  string
	template string
	timeout  time.Duration
	env, md  kvList
	cwd      string
	user     string
	keep     bool
	stdin    bool
	argv     []string
}

func parseRun(args []string, std stdio) (*runOpts, int, bool) {
	o := &runOpts{env: kvList{}, md: kvList{}}
	fs := newFlagSet("run", runSynopsis, std, &o.cf)
	fs.StringVar(&o.runtime, "runtime", "", "OCI runtime: runsc, crun or runc (default: the daemon's)")
	fs.StringVar(&o.template, "template", "base", "template to create the sandbox from")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "sandbox lifetime; CMD is killed when it ends")
	fs.Var(o.env, "env", "environment variable `K=V` for CMD (repeatable)")
	fs.Var(o.md, "metadata", "sandbox metadata `K=V` (repeatable; see sbx ls --metadata)")
	fs.StringVar(&o.cwd, "cwd", "", "working directory of CMD (default: the user's home)")
	fs.StringVar(&o.user, "user", "", "user to run CMD as (default: the template's user)")
	fs.BoolVar(&o.keep, "keep", false, "keep the sandbox after CMD ends (its ID is printed to stderr)")
	fs.BoolVar(&o.stdin, "i", false, "forward standard input to CMD")
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	o.argv = fs.Args()
	if err := o.validate(); err != nil {
		fmt.Fprintln(std.err, "sbx run:", err)
		return nil, exitUsage, false
	}
	return o, 0, true
}

func (o *runOpts) validate() error {
	switch {
	case len(o.argv) == 0 || o.argv[0] == "":
		return errors.New("no command given (usage: sbx run [flags] -- CMD [ARGS...])")
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	case o.runtime != "" && o.runtime != "runsc" && o.runtime != "crun" && o.runtime != "runc":
		return fmt.Errorf("--runtime %q: want runsc, crun or runc", o.runtime)
	case o.template == "":
		return errors.New("--template must not be empty")
	}
	return nil
}

// runRun implements sbx run.
func runRun(ctx context.Context, args []string, std stdio) int {
	o, code, ok := parseRun(args, std)
	if !ok {
		return code
	}
	c, err := o.cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx run:", err)
		return exitUsage
	}
	sb, err := c.Create(ctx, client.CreateRequest{TemplateID: o.template, Timeout: o.timeout,
		Metadata: o.md, Runtime: o.runtime})
	if err != nil {
		return fail(ctx, std, "creating sandbox", err)
	}
	defer o.cleanup(c, sb.SandboxID, std)
	exit, err := c.Sandbox(sb).Run(ctx, o.request(std), std.out, std.err)
	switch {
	case err != nil:
		return fail(ctx, std, "running command", err)
	case exit < 0:
		return exitKilled
	}
	return exit
}

func (o *runOpts) request(std stdio) client.RunRequest {
	req := client.RunRequest{Argv: o.argv, Envs: o.env, Cwd: o.cwd, User: o.user, Timeout: o.timeout}
	if len(o.argv) == 1 {
		req = client.RunRequest{Cmd: o.argv[0], Envs: o.env, Cwd: o.cwd, User: o.user, Timeout: o.timeout}
	}
	if o.stdin {
		req.Stdin = std.in
	}
	return req
}

// cleanup removes the sandbox (even after Ctrl-C) unless --keep.
func (o *runOpts) cleanup(c *client.Client, id string, std stdio) {
	if o.keep {
		fmt.Fprintln(std.err, "sbx: kept sandbox", id)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Kill(ctx, id); err != nil && !errors.Is(err, client.ErrNotFound) {
		fmt.Fprintf(std.err, "sbx: removing sandbox %s: %v\n", id, err)
	}
}

// fail reports an infrastructure error, or an interruption as such.
func fail(ctx context.Context, std stdio, what string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintln(std.err, "sbx: interrupted")
		return exitIntr
	}
	fmt.Fprintf(std.err, "sbx: %s: %v\n", what, err)
	return exitInfra
}
