package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/process"
)

// RunRequest is a command to run in a sandbox. Exactly one of Cmd and Argv
// must be set.
type RunRequest struct {
	Cmd     string            // a shell command, run as /bin/bash -l -c Cmd (like the E2B SDK)
	Argv    []string          // a program and its arguments, executed directly
	Envs    map[string]string // added to the sandbox's environment
	Cwd     string            // working directory ("" = the user's home)
	User    string            // Linux user ("" = the sandbox's default user)
	Stdin   io.Reader         // if non-nil, copied to the command's stdin, then closed
	Timeout time.Duration     // the command is killed after this long (0 = no limit)
	// Detach leaves the command running when ctx is cancelled (Run returns
	// the context's error); by default it is killed, unless ctx was
	// cancelled with the cause ErrDetached.
	Detach bool
	// TTY, if non-nil, runs the command on a pseudo-terminal.
	TTY *TTY
}

// keepalive is the Keepalive-Ping-Interval (seconds) the E2B SDK sends.
const keepalive = "50"

// Run runs a command and streams its output to stdout and stderr (either may
// be nil) as it arrives. It returns the exit code; -1 means the command was
// killed by a signal. err is non-nil only if the command could not be run or
// its stream broke: a failing command is not an error.
func (s *SandboxConn) Run(ctx context.Context, req RunRequest, stdout, stderr io.Writer) (exitCode int, err error) {
	start, err := req.startRequest()
	if err != nil {
		return -1, fmt.Errorf("run: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx) // also stops the stdin feeder
	defer cancel()
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	creq := connect.NewRequest(start)
	creq.Header().Set("Keepalive-Ping-Interval", keepalive)
	if req.User != "" {
		creq.Header().Set("Authorization", basicUser(req.User))
	}
	stream, err := s.proc.Start(ctx, creq)
	if err != nil {
		return -1, fmt.Errorf("run: %w", rpcErr(err))
	}
	defer stream.Close()
	r := &runner{conn: s, req: req, stdout: orDiscard(stdout), stderr: orDiscard(stderr)}
	code, err := r.consume(ctx, stream)
	if err != nil {
		return -1, fmt.Errorf("run: %w", err)
	}
	return code, nil
}

func (req RunRequest) startRequest() (*process.StartRequest, error) {
	cfg := &process.ProcessConfig{Envs: req.Envs}
	switch {
	case req.Cmd != "" && len(req.Argv) > 0:
		return nil, fmt.Errorf("%w: set Cmd or Argv, not both", ErrBadRequest)
	case req.Cmd != "":
		cfg.Cmd, cfg.Args = "/bin/bash", []string{"-l", "-c", req.Cmd}
	case len(req.Argv) > 0 && req.Argv[0] != "":
		cfg.Cmd, cfg.Args = req.Argv[0], req.Argv[1:]
	default:
		return nil, fmt.Errorf("%w: no command", ErrBadRequest)
	}
	if req.Cwd != "" {
		cfg.Cwd = &req.Cwd
	}
	if req.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative timeout %v", ErrBadRequest, req.Timeout)
	}
	stdin := req.Stdin != nil
	sr := &process.StartRequest{Process: cfg, Stdin: &stdin}
	if req.TTY != nil {
		sr.Pty = req.TTY.proto()
	}
	return sr, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// classify turns a stream error into one matching the package's sentinels,
// preferring the context's own error when it ended the stream.
func classify(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: command timed out: %w", ErrTimeout, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return rpcErr(err)
}
