package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/failpoint"
	"github.com/sbx-dev/sbx/internal/telemetry"
	"github.com/sbx-dev/sbx/internal/untrusted"
)

// agentClient talks to agents over their sandbox links. Keep-alives are off:
// each sandbox is a different host and connections would only pile up. An
// agent's response header is read up to untrusted.MaxHeaderBytes (an error
// past it; before, up to net/http's 10 MiB, bounded only by the timeouts).
var agentClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxResponseHeaderBytes: untrusted.MaxHeaderBytes},
	CheckRedirect: noRedirect,
}

// noRedirect is the CheckRedirect of every client that talks to an agent:
// an agent is the sandbox's (its root is the tenant's), so its redirect is
// an answer, never followed. Following one would make the daemon dial
// wherever the sandbox names (a host service, another sandbox's agent)
// with the init token, the new access token and the env vars.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// agentStartTimeout bounds how long a fresh sandbox may take to answer.
const agentStartTimeout = 10 * time.Second

// initAgent sends /init with the sandbox's token, default user and env vars.
// An agent that does not take the request (a refused, reset or timed-out
// connection: under load a sandbox can stall past one dial's timeout right
// after it answered /health) is asked again until agentStartTimeout or ctx
// ends; /init is idempotent. Failing that, the error is ErrUnavailable (the
// API answers 503 with Retry-After), never a bare internal error. An agent
// that answers and refuses is not asked again.
func (m *Manager) initAgent(ctx context.Context, sb *Sandbox) error {
	base := m.agentBase(sb)
	defer sb.closeAgent()
	user := sb.tmpl.User
	if user == "" {
		user = "user"
	}
	req := map[string]any{
		"accessToken": sb.rec.EnvdToken, "envVars": sandboxEnv(sb),
		"defaultUser": user, "defaultWorkdir": sb.tmpl.Workdir, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"lifecycleID": sb.rec.LifecycleID,
	}
	if len(m.cfg.EgressCA) > 0 && !sb.tmpl.BuildStep {
		req["egressCA"] = string(m.cfg.EgressCA)
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, agentStartTimeout)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		err := postInit(ctx, sb.agentClient(), base, sb.rec.InitSecret, body)
		var refused *initRefusedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &refused):
			return fmt.Errorf("init sandbox %s agent: %w", sb.rec.ID, err)
		case ctx.Err() != nil:
			return fmt.Errorf("init sandbox %s agent: %w", sb.rec.ID, errors.Join(ErrUnavailable, err))
		}
		m.log.Debug("agent did not take /init yet; retrying", "sandbox", sb.rec.ID, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(delay*2, 250*time.Millisecond)
	}
}

// initRefusedError is an agent's non-2xx answer to /init.
type initRefusedError struct {
	status string
	msg    []byte
}

func (e *initRefusedError) Error() string { return e.status + ": " + string(e.msg) }

// postInit makes one /init request with c; a transport failure is returned
// as is.
func postInit(ctx context.Context, c *http.Client, base, secret string, body []byte) error {
	if err := failpoint.Hit("create/init-unreachable"); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/init", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Sbx-Init-Token", secret)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &initRefusedError{resp.Status, msg}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 512)) // a kept connection is reused only once read
	return nil
}

// sandboxEnv is the default env of sb's processes: E2B's E2B_SANDBOX=true,
// then the template's, then the create's envs, then, as on E2B (whose envd
// stores them after /init's env), the sandbox's, its team's and its
// template's ids, which the caller cannot override.
func sandboxEnv(sb *Sandbox) map[string]string {
	out := mergeEnv(map[string]string{"E2B_SANDBOX": "true"}, sb.tmpl.Env)
	maps.Copy(out, sb.rec.EnvVars)
	team := sb.rec.Team
	if team == "" {
		team = telemetry.DefaultTeam
	}
	out["E2B_SANDBOX_ID"], out["E2B_TEAM_ID"], out["E2B_TEMPLATE_ID"] = sb.rec.ID, team, sb.rec.TemplateID
	return out
}

// mergeEnv returns the template's env overridden by the sandbox's (never nil).
func mergeEnv(tmpl, own map[string]string) map[string]string {
	out := make(map[string]string, len(tmpl)+len(own))
	maps.Copy(out, tmpl)
	maps.Copy(out, own)
	return out
}

// waitHealthy polls GET /health until it answers 2xx or the start timeout.
func waitHealthy(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, agentStartTimeout)
	defer cancel()
	// A refused connect on a local link costs microseconds: poll finely, the
	// agent's start is on every create's critical path.
	delay := time.Millisecond
	for {
		if err := health(ctx, base); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(delay*2, 4*time.Millisecond)
	}
}

func health(ctx context.Context, base string) error {
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(hctx, http.MethodGet, base+"/health", nil)
	resp, err := agentClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("health: %s", resp.Status)
	}
	return nil
}
