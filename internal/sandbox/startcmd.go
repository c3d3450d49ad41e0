package sandbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/untrusted"
)

// StartCmdTimeout bounds how long a create waits for a template's ready
// command to pass.
const StartCmdTimeout = 2 * time.Minute

// startCmd starts the template's start command in the background (as its
// user, in its workdir) and waits until its ready command exits 0. A start
// command that fails (a non-zero exit, or no start at all) before the
// sandbox is ready, or by the time its ready command passes, fails the
// create with its output, as E2B's build fails then; one that exits 0 (a
// daemon that forks) leaves the ready command to decide. A ready command
// alone (E2B's setReadyCmd) is waited for as well. Templates with neither
// return at once.
func (m *Manager) startCmd(ctx context.Context, sb *Sandbox) error {
	t := sb.tmpl
	if t.StartCmd == "" && t.ReadyCmd == "" {
		return nil
	}
	conn := AgentConn(sb.info.SandboxIP.String(), m.cfg.AgentPort, sb.rec.ID, sb.rec.EnvdToken)
	ctx, cancel := context.WithTimeout(ctx, StartCmdTimeout)
	defer cancel()
	// the ready command's runs end when the start command fails
	rctx, stopReady := context.WithCancel(ctx)
	defer stopReady()
	end := &startEnd{done: make(chan struct{})}
	// The stream only watches the start command: once the sandbox is ready
	// it is closed and the process goes on (the agent detaches it).
	sctx, stopWatching := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatching()
	if t.StartCmd != "" {
		go func() {
			end.msg, end.failed = runStart(sctx, conn, t)
			close(end.done)
			if end.failed {
				stopReady()
			}
		}()
	}
	ready := t.ReadyCmd
	if ready == "" {
		ready = "sleep 0" // no ready check: started is ready (E2B waits 20 s; we do not)
	}
	return waitReady(ctx, rctx, conn, t, ready, end)
}

// startEnd is how a start command ended: msg and failed are set before
// done is closed.
type startEnd struct {
	done   chan struct{}
	msg    string
	failed bool
}

// failure is the start command's failure, if it has ended failing.
func (e *startEnd) failure() (string, bool) {
	select {
	case <-e.done:
		return e.msg, e.failed
	default:
		return "", false
	}
}

// runStart runs the start command until it ends and returns how it ended,
// with the start of its output made printable (it goes into the create's
// error, which the CLI and SDKs print to a terminal: no escape sequence or
// CR of the sandbox's reaches it), and whether that is a failure.
func runStart(ctx context.Context, conn *client.SandboxConn, t Template) (string, bool) {
	var out strings.Builder
	w := &capped{w: &out, n: 4096}
	user, cwd, env := startIdentity(t)
	code, err := conn.Run(ctx, client.RunRequest{Cmd: t.StartCmd, Cwd: cwd, User: user, Envs: env, Detach: true}, w, w)
	if err != nil {
		return fmt.Sprintf("start command failed: %v", err), true
	}
	return fmt.Sprintf("start command exited with code %d: %s", code, printable([]byte(out.String()))), code != 0
}

// waitReady runs ready every 200 ms until it exits 0, the start command
// fails (end; rctx, which the runs of ready take, ends then), or ctx ends.
// A run of ready is bounded by ctx only, as E2B's (the SDK's
// waitForTimeout(20_000), which its fromDockerfile gives a CMD, is
// `sleep 20`: a shorter bound on each run would never let it pass).
func waitReady(ctx, rctx context.Context, conn *client.SandboxConn, t Template, ready string, end *startEnd) error {
	user, cwd, env := startIdentity(t)
	for {
		code, err := conn.Run(rctx, client.RunRequest{Cmd: ready, Cwd: cwd, User: user, Envs: env}, nil, nil)
		if msg, failed := end.failure(); failed {
			return fmt.Errorf("%w: template start command ended before the sandbox was ready: %s", ErrUnavailable, msg)
		}
		if err == nil && code == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: template ready command %q did not pass within %s", ErrUnavailable, ready, StartCmdTimeout)
		}
		select {
		case <-rctx.Done(): // the start command failed (the next turn says so), or ctx ended
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startIdentity is the user, working directory and env t's start and
// ready commands run as, in and with: StartAs's if set (its env when it
// has one), else the template's defaults.
func startIdentity(t Template) (user, cwd string, env map[string]string) {
	if t.StartAs != nil {
		env = t.StartAs.Env
		if env == nil { // a build recorded before StartAs kept its env
			env = t.Env
		}
		return t.StartAs.User, t.StartAs.Workdir, env
	}
	return t.User, t.Workdir, t.Env
}

// AgentConn is a connection straight to a sandbox's agent (not through the
// proxy), for the daemon's own commands. The agent's redirects are not
// followed (noRedirect) and its headers are read as agentClient reads them.
func AgentConn(ip string, port int, id, token string) *client.SandboxConn {
	hc := &http.Client{Transport: agentConnTransport, CheckRedirect: noRedirect}
	return client.New(fmt.Sprintf("http://%s:%d", ip, port), "", client.WithHTTPClient(hc)).SandboxByID(id, token)
}

// agentConnTransport is net/http's default transport (kept-alive
// connections) reading at most untrusted.MaxHeaderBytes of header.
var agentConnTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // an agent is on a sandbox link, never behind the host's proxy
	t.MaxResponseHeaderBytes = untrusted.MaxHeaderBytes
	return t
}()

// capped writes at most n bytes to w, dropping the rest.
type capped struct {
	w io.Writer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.n > 0 {
		k := min(len(p), c.n)
		c.n -= k
		_, _ = c.w.Write(p[:k])
	}
	return len(p), nil
}
