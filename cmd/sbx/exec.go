package main

import (
	"context"
	"errors"

	"github.com/sbx-dev/sbx/client"
)

// execCmd is `sbx exec [flags] ID [--] CMD [ARGS...]`, like docker exec.
type execCmd struct {
	Stdin bool     `name:"interactive" short:"i" help:"forward standard input to CMD"`
	TTY   bool     `name:"tty" short:"t" help:"run CMD on a pseudo-terminal, as sbx shell does (input always forwarded)"`
	User  string   `short:"u" help:"user to run CMD as (default: the template's user)"`
	Dir   string   `name:"workdir" short:"w" help:"working directory of CMD (default: the user's home)"`
	Env   kvList   `short:"e" placeholder:"K=V" help:"environment variable for CMD (repeatable)"`
	ID    string   `arg:"" name:"id" help:"the running sandbox"`
	Argv  []string `arg:"" optional:"" passthrough:"partial" name:"cmd" help:"the command and its arguments"`
}

// Help is the long help of sbx exec.
func (*execCmd) Help() string {
	return `Runs CMD in a running sandbox with its output streamed live and exits with
CMD's exit code. A single CMD argument is a shell command (run with
bash -l -c); several are executed directly. Ctrl-C kills CMD. With -t
(docker's -it) CMD runs on a pseudo-terminal like sbx shell's.

exit codes: CMD's own; 125 if sbx or the sandbox failed; 137 if CMD was
killed by a signal; 130 if interrupted; 2 for bad usage`
}

func (x *execCmd) run(e *env) int {
	argv := trimDashes(x.Argv)
	if len(argv) == 0 || argv[0] == "" {
		e.errorf("no command given (usage: sbx exec [flags] ID [--] CMD [ARGS...])")
		return exitUsage
	}
	sc, code := connectSandbox(e, x.ID)
	if sc == nil {
		return code
	}
	req := client.RunRequest{Argv: argv, Envs: x.Env, Cwd: x.Dir, User: x.User}
	if len(argv) == 1 {
		req.Argv, req.Cmd = nil, argv[0]
	}
	if x.TTY {
		return runTTY(e, sc, req)
	}
	if x.Stdin {
		req.Stdin = e.std.in
	}
	return runExit(e.ctx, e.std, sc, req)
}

// connectSandbox returns a connection to the running sandbox id (its
// timeout unchanged), or nil and the exit code after reporting.
func connectSandbox(e *env, id string) (*client.SandboxConn, int) {
	c, code := e.client()
	if c == nil {
		return nil, code
	}
	sb, err := c.Connect(e.ctx, id, 0)
	if err != nil {
		return nil, sandboxError(e, id, err)
	}
	return c.Sandbox(sb), 0
}

// sandboxError reports an API error about sandbox id: exit 1 when it does
// not exist, 130 when interrupted, else 125 (sbx failed).
func sandboxError(e *env, id string, err error) int {
	switch {
	case errors.Is(err, client.ErrNotFound):
		e.errorf("%s: no such sandbox", id)
		return 1
	case errors.Is(err, context.Canceled) && e.ctx.Err() != nil:
		e.errorf("interrupted")
		return exitIntr
	}
	e.errorf("%s: %v", id, err)
	return exitInfra
}
