package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// runCmd is `sbx run [flags] [--] CMD [ARGS...]`.
type runCmd struct {
	Runtime  string        `help:"OCI runtime: runsc, crun or runc (default: the daemon's)"`
	Template string        `default:"base" help:"template to create the sandbox from"`
	Timeout  time.Duration `default:"5m" help:"sandbox lifetime; CMD is killed when it ends"`
	Env      kvList        `short:"e" placeholder:"K=V" help:"environment variable for CMD (repeatable)"`
	Metadata kvList        `placeholder:"K=V" help:"sandbox metadata (repeatable; see sbx ls --metadata)"`
	Cwd      string        `name:"workdir" aliases:"cwd" short:"w" help:"working directory of CMD (default: the user's home)"`
	User     string        `short:"u" help:"user to run CMD as (default: the template's user)"`
	Keep     bool          `help:"keep the sandbox after CMD ends (its ID is printed to stderr)"`
	Stdin    bool          `name:"interactive" short:"i" help:"forward standard input to CMD"`
	Argv     []string      `arg:"" optional:"" passthrough:"partial" name:"cmd" help:"the command and its arguments"`
}

// Help is the long help of sbx run.
func (*runCmd) Help() string {
	return `Creates a sandbox, runs CMD in it with its output streamed live, removes the
sandbox and exits with CMD's exit code. A single CMD argument is a shell
command (run with bash -l -c); several are executed directly.

exit codes: CMD's own; 125 if sbx or the sandbox failed; 137 if CMD was
killed by a signal; 130 if interrupted; 2 for bad usage`
}

// runOpts are the parsed flags of sbx run.
type runOpts struct {
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

func (r *runCmd) opts() *runOpts {
	return &runOpts{runtime: r.Runtime, template: r.Template, timeout: r.Timeout, env: r.Env, md: r.Metadata,
		cwd: r.Cwd, user: r.User, keep: r.Keep, stdin: r.Stdin, argv: trimDashes(r.Argv)}
}

// trimDashes drops the "--" kong leaves in front of a passthrough argument.
func trimDashes(argv []string) []string {
	if len(argv) > 0 && argv[0] == "--" {
		return argv[1:]
	}
	return argv
}

func (o *runOpts) validate() error {
	switch {
	case len(o.argv) == 0 || o.argv[0] == "":
		return errors.New("no command given (usage: sbx run [flags] [--] CMD [ARGS...])")
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	case o.runtime != "" && o.runtime != "runsc" && o.runtime != "crun" && o.runtime != "runc":
		return fmt.Errorf("--runtime %q: want runsc, crun or runc", o.runtime)
	case o.template == "":
		return errors.New("--template must not be empty")
	}
	return nil
}

// run implements sbx run.
func (r *runCmd) run(e *env) int {
	o := r.opts()
	if err := o.validate(); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	c, code := e.client()
	if c == nil {
		return code
	}
	ctx, std := e.ctx, e.std
	sb, err := c.Create(ctx, client.CreateRequest{TemplateID: o.template, Timeout: o.timeout,
		Metadata: o.md, Runtime: o.runtime})
	if err != nil {
		return fail(ctx, std, "creating sandbox", err)
	}
	defer o.cleanup(c, sb.SandboxID, std)
	return runExit(ctx, std, c.Sandbox(sb), o.request(std))
}

// runExit runs req and maps the outcome to an exit code: the command's own,
// 137 if a signal killed it, 125/130 if sbx failed or was interrupted.
func runExit(ctx context.Context, std stdio, sc *client.SandboxConn, req client.RunRequest) int {
	exit, err := sc.Run(ctx, req, std.out, std.err)
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
		fmt.Fprintln(std.err, "sbx: kept sandbox", cellText(id))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Kill(ctx, id); err != nil && !errors.Is(err, client.ErrNotFound) {
		fmt.Fprintf(std.err, "sbx: removing sandbox %s: %s\n", id, termText(explain(err)))
	}
}

// fail reports an infrastructure error, or an interruption as such.
func fail(ctx context.Context, std stdio, what string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintln(std.err, "sbx: interrupted")
		return exitIntr
	}
	fmt.Fprintf(std.err, "sbx: %s: %s\n", what, termText(explain(err)))
	return exitInfra
}
