package clienttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
)

// Proc is one command given to an ExecFunc.
type Proc struct {
	Argv    []string
	Envs    map[string]string // the sandbox's envVars overlaid with the command's
	Cwd     string
	User    string
	Stdin   io.Reader // EOF at once unless the command was started with stdin
	Stdout  io.Writer
	Stderr  io.Writer
	Sandbox *Sandbox
}

// ExecFunc runs a command until it exits or ctx ends (killed: return -1).
type ExecFunc func(ctx context.Context, p *Proc) (exitCode int)

// proc is a running process: its stdin pipe and its kill switch.
type proc struct {
	stdin *io.PipeWriter
	kill  context.CancelFunc
	sb    *Sandbox
}

type procHandler struct {
	processconnect.UnimplementedProcessHandler
	s *Server
}

// Start runs the command with Server.Exec and streams start, data and end.
func (h *procHandler) Start(ctx context.Context, req *connect.Request[process.StartRequest], stream *connect.ServerStream[process.StartResponse]) error {
	in := info(ctx)
	cfg := req.Msg.GetProcess()
	if cfg.GetCmd() == "" {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("empty cmd"))
	}
	reqCtx := ctx
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	pid, stdin := h.s.register(ctx, in.sb, kill, req.Msg.GetStdin())
	defer h.s.unregister(pid)
	out := &eventWriter{stream: stream}
	if err := out.send(&process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pid}}}); err != nil {
		return err
	}
	p := &Proc{Argv: append([]string{cfg.GetCmd()}, cfg.GetArgs()...), Envs: mergeEnvs(in.sb.EnvVars, cfg.GetEnvs()),
		Cwd: cfg.GetCwd(), User: in.user, Stdin: stdin, Stdout: out.stdout(), Stderr: out.stderr(), Sandbox: in.sb}
	code := h.s.Exec(ctx, p)
	if err := reqCtx.Err(); err != nil { // the client's deadline or disconnect
		return connect.NewError(ctxCode(err), err)
	}
	return out.send(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: endEvent(code)}})
}

func ctxCode(err error) connect.Code {
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.CodeDeadlineExceeded
	}
	return connect.CodeCanceled
}

func endEvent(code int) *process.ProcessEvent_EndEvent {
	if code < 0 {
		return &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: killed"}
	}
	return &process.ProcessEvent_EndEvent{ExitCode: int32(code), Exited: true, Status: fmt.Sprintf("exit status %d", code)}
}

func mergeEnvs(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func (h *procHandler) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	p, err := h.s.proc(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if _, err := p.stdin.Write(req.Msg.GetInput().GetStdin()); err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, err)
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

func (h *procHandler) CloseStdin(ctx context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	p, err := h.s.proc(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	p.stdin.Close()
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

func (h *procHandler) SendSignal(ctx context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	p, err := h.s.proc(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	h.s.mu.Lock()
	p.sb.Signals = append(p.sb.Signals, req.Msg.GetSignal().String())
	h.s.mu.Unlock()
	p.kill()
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

// eventWriter serialises stream sends; stdout and stderr write through it.
type eventWriter struct {
	mu     sync.Mutex
	stream *connect.ServerStream[process.StartResponse]
}

func (e *eventWriter) send(ev *process.ProcessEvent) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stream.Send(&process.StartResponse{Event: ev})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func (e *eventWriter) stdout() io.Writer { return e.data(false) }
func (e *eventWriter) stderr() io.Writer { return e.data(true) }

func (e *eventWriter) data(toStderr bool) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		d := &process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Stdout{Stdout: append([]byte(nil), b...)}}
		if toStderr {
			d.Output = &process.ProcessEvent_DataEvent_Stderr{Stderr: append([]byte(nil), b...)}
		}
		if err := e.send(&process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: d}}); err != nil {
			return 0, err
		}
		return len(b), nil
	})
}

// register records a new process; its stdin is a pipe only if withStdin.
// The pipe breaks when ctx ends, so a killed reader returns.
func (s *Server) register(ctx context.Context, sb *Sandbox, kill context.CancelFunc, withStdin bool) (uint32, io.Reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextPID++
	pr, pw := io.Pipe()
	context.AfterFunc(ctx, func() { pw.CloseWithError(io.ErrClosedPipe) })
	s.procs[s.nextPID] = &proc{stdin: pw, kill: kill, sb: sb}
	if !withStdin {
		pw.Close()
		return s.nextPID, strings.NewReader("")
	}
	return s.nextPID, pr
}

func (s *Server) unregister(pid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, pid)
}

func (s *Server) proc(ctx context.Context, sel *process.ProcessSelector) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[sel.GetPid()]
	if p == nil || p.sb != info(ctx).sb {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d not found", sel.GetPid()))
	}
	return p, nil
}
