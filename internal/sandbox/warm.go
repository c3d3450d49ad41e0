package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// warmTimeout bounds a pooled sandbox's warm-up command.
const warmTimeout = 10 * time.Second

// warm runs, in a started pooled sandbox before it is offered, the command a
// tenant's first commands.run('…') runs: `bash -l -c true` as the template's
// user in its workdir. The tenant's first command then finds what it needs
// cached (under gVisor the Sentry's dentry and page caches of bash, the
// login profile and what it runs; the agent's own first-request state)
// instead of paying for it. It leaves nothing a tenant could see: the agent
// has no token yet, the command writes no file and has ended (and been
// reaped) before the sandbox is pooled; the tenant's env, token and deadline
// come with /init at claim as for a cold sandbox. A command that fails (a
// user-built image without bash, or without the user) only means no
// warm-up; an agent that does not answer fails the fill. Only sandboxes
// with their own kernel are warmed: under crun and runc the host's caches
// are shared and already warm, and a warm-up only takes CPU from the
// creates running meanwhile.
func (m *Manager) warm(ctx context.Context, sb *Sandbox) error {
	if !m.runtimes[sb.rec.Runtime].Capabilities().OwnKernel {
		return nil
	}
	user := sb.tmpl.User
	if user == "" {
		user = "user"
	}
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	conn := AgentConn(sb.info.SandboxIP.String(), m.cfg.AgentPort, sb.rec.ID, "")
	code, err := conn.Run(ctx, client.RunRequest{Cmd: "true", User: user, Cwd: sb.tmpl.Workdir}, nil, nil)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("warm pooled sandbox %s: %w", sb.rec.ID, ctx.Err())
	case err != nil || code != 0:
		m.log.Debug("pooled sandbox warm-up failed; pooled unwarmed", "sandbox", sb.rec.ID, "code", code, "err", err)
	}
	return nil
}
