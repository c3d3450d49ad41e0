package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"time"
)

// agentClient talks to agents over their sandbox links. Keep-alives are off:
// each sandbox is a different host and connections would only pile up.
var agentClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext},
}

// agentStartTimeout bounds how long a fresh sandbox may take to answer.
const agentStartTimeout = 10 * time.Second

// initAgent sends /init with the sandbox's token, default user and env vars.
func (m *Manager) initAgent(ctx context.Context, sb *Sandbox) error {
	base := fmt.Sprintf("http://%s:%d", sb.info.SandboxIP, m.cfg.AgentPort)
	user := sb.tmpl.User
	if user == "" {
		user = "user"
	}
	body, _ := json.Marshal(map[string]any{
		"accessToken": sb.rec.EnvdToken, "envVars": mergeEnv(sb.tmpl.Env, sb.rec.EnvVars),
		"defaultUser": user, "defaultWorkdir": sb.tmpl.Workdir, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"lifecycleID": sb.rec.LifecycleID,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/init", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Sbx-Init-Token", sb.rec.InitSecret)
	resp, err := agentClient.Do(req)
	if err != nil {
		return fmt.Errorf("init sandbox %s agent: %w", sb.rec.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("init sandbox %s agent: %s: %s", sb.rec.ID, resp.Status, msg)
	}
	return nil
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
