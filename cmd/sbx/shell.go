package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/sbx-dev/sbx/client"
)

// shellCmd is `sbx shell ID`, like `docker exec -it ID bash`: a login shell
// on a pseudo-terminal of the local terminal's size, in raw mode, resized
// on SIGWINCH. Ctrl-P Ctrl-Q detaches (the shell keeps running); the
// terminal is restored however the session ends.
type shellCmd struct {
	User  string   `short:"u" help:"user to run the shell as (default: the template's user)"`
	Dir   string   `name:"workdir" short:"w" help:"working directory (default: the user's home)"`
	Env   kvList   `short:"e" placeholder:"K=V" help:"environment variable (repeatable)"`
	ID    string   `arg:"" name:"id" help:"the running sandbox"`
	Shell []string `arg:"" optional:"" passthrough:"partial" name:"cmd" help:"program to run instead of bash -l"`
}

// Help is the long help of sbx shell.
func (*shellCmd) Help() string {
	return `Opens an interactive shell (bash -l, or CMD) in a running sandbox on a
pseudo-terminal and exits with its exit code. Ctrl-P Ctrl-Q detaches and
leaves the shell running. Input that is not a terminal (a pipe, a file) is
typed into the shell, and its end is a Ctrl-D.`
}

// detachKeys end a session without ending the shell (docker's default).
var detachKeys = []byte{0x10, 0x11} // Ctrl-P Ctrl-Q

func (s *shellCmd) run(e *env) int {
	sc, code := connectSandbox(e, s.ID)
	if sc == nil {
		return code
	}
	argv := trimDashes(s.Shell)
	if len(argv) == 0 {
		argv = []string{"/bin/bash", "-l"}
	}
	return runTTY(e, sc, client.RunRequest{Argv: argv, Envs: s.Env, Cwd: s.Dir, User: s.User})
}

// runTTY runs req on a pseudo-terminal wired to the local one (see
// shellCmd) and returns the exit code.
func runTTY(e *env, sc *client.SandboxConn, req client.RunRequest) int {
	ctx, cancel := context.WithCancelCause(e.ctx)
	defer cancel(nil)
	tty, restore, err := openTerminal(ctx, e.std)
	if err != nil {
		e.errorf("%v", err)
		return exitInfra
	}
	req.TTY = tty
	in := e.std.in
	if !isTerminal(in) {
		in = &eotAtEOF{r: in} // piped input: its end ends the shell, as Ctrl-D would
	}
	req.Stdin = &detachReader{r: in, keys: detachKeys, detach: func() { cancel(client.ErrDetached) }}
	exit, err := sc.Run(ctx, req, e.std.out, e.std.err)
	restore()
	return shellExit(e, ctx, exit, err)
}

// shellExit maps the end of a shell session to an exit code.
func shellExit(e *env, ctx context.Context, exit int, err error) int {
	switch {
	case context.Cause(ctx) == client.ErrDetached:
		fmt.Fprintf(e.std.err, "\r\nsbx: detached; the shell keeps running\r\n")
		return 0
	case err != nil:
		return fail(e.ctx, e.std, "shell", err)
	case exit < 0:
		return exitKilled
	}
	return exit
}

// openTerminal puts a local terminal on stdin into raw mode and reports its
// size and size changes (SIGWINCH). Without a terminal (tests, pipes) the
// size is 80x24 and nothing is changed. restore undoes it all.
func openTerminal(ctx context.Context, std stdio) (*client.TTY, func(), error) {
	if !isTerminal(std.in) {
		return &client.TTY{Size: client.TermSize{Cols: 80, Rows: 24}}, func() {}, nil
	}
	fd := int(std.in.(*os.File).Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal raw mode: %w", err)
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	resize := make(chan client.TermSize, 1)
	go forwardResizes(ctx, fd, winch, resize)
	restore := func() {
		signal.Stop(winch)
		_ = term.Restore(fd, old)
	}
	return &client.TTY{Size: termSize(fd), Resize: resize}, restore, nil
}

func forwardResizes(ctx context.Context, fd int, winch <-chan os.Signal, resize chan<- client.TermSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-winch:
			select {
			case resize <- termSize(fd):
			case <-ctx.Done():
				return
			}
		}
	}
}

func termSize(fd int) client.TermSize {
	w, h, err := term.GetSize(fd)
	if err != nil || w <= 0 || h <= 0 {
		return client.TermSize{Cols: 80, Rows: 24}
	}
	return client.TermSize{Cols: uint16(w), Rows: uint16(h)}
}

// detachReader passes input through until it sees keys in sequence; then
// it calls detach and reports EOF. A partial match is held back until the
// next byte shows whether it completes the sequence.
type detachReader struct {
	r       io.Reader
	keys    []byte
	detach  func()
	matched int
	pending []byte
	err     error // of r, returned once pending is drained
}

func (d *detachReader) Read(p []byte) (int, error) {
	for len(d.pending) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		buf := make([]byte, max(len(p), 1))
		n, err := d.r.Read(buf)
		d.scan(buf[:n])
		if err != nil && d.err == nil {
			d.err = err
		}
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

// scan moves bs to pending, watching for the detach keys.
func (d *detachReader) scan(bs []byte) {
	for _, b := range bs {
		if d.err != nil {
			return
		}
		if b == d.keys[d.matched] {
			if d.matched++; d.matched == len(d.keys) {
				d.detach()
				d.err = io.EOF
			}
			continue
		}
		d.pending = append(d.pending, d.keys[:d.matched]...)
		d.matched = 0
		if b == d.keys[0] {
			d.matched = 1
			continue
		}
		d.pending = append(d.pending, b)
	}
}

// isTerminal reports whether in is a terminal.
func isTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// eotAtEOF yields r's bytes, then one Ctrl-D (EOT) at r's end, then EOF: a
// pseudo-terminal's input never ends by itself, so without it `sbx shell ID
// <script` waited for the sandbox's timeout.
type eotAtEOF struct {
	r    io.Reader
	sent bool
}

func (e *eotAtEOF) Read(p []byte) (int, error) {
	if e.sent {
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	if err == io.EOF && n == 0 && len(p) > 0 {
		e.sent = true
		p[0] = 0x04
		return 1, nil
	}
	return n, err
}
