package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
)

// defaultTemplate is what the SDK asks for when the user names none.
const defaultTemplate = "base"

// template is the template req asks for (defaultTemplate when none).
func (req newSandbox) template() string {
	if req.TemplateID == "" {
		return defaultTemplate
	}
	return req.TemplateID
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req newSandbox
	if !decode(w, r, &req) {
		return
	}
	team := teamOf(r)
	// As E2B's create: the template is resolved before the rest of the
	// body is checked (a missing template is 404 whatever else is wrong).
	err := s.useTemplate(r.Context(), team, req.template(), true)
	var opts sandbox.CreateOpts
	if err == nil {
		opts, err = s.createOpts(team, req)
	}
	var release func()
	if err == nil {
		release, err = s.reserveCreate(team, 1, opts.Resources)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	defer release()
	info, err := s.mgr.Create(r.Context(), opts)
	if err != nil {
		s.log.WarnContext(r.Context(), "create failed", "template", opts.Template, "err", boundText(err.Error()))
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.sandboxResp(info))
}

// createOpts validates a create body and turns it into manager options.
func (s *Server) createOpts(team string, req newSandbox) (o sandbox.CreateOpts, err error) {
	cfg := s.mgr.Config()
	if err := unsupportedFields(req); err != nil {
		return sandbox.CreateOpts{}, err
	}
	o = sandbox.CreateOpts{
		Team: team, Template: req.template(), Runtime: req.Runtime, Timeout: cfg.DefaultTimeout,
		Metadata: req.Metadata, EnvVars: req.EnvVars, AllowNet: req.AllowInternetAccess,
		Resources: sandbox.Resources{CPUCount: req.CPUCount, MemoryMB: req.MemoryMB, DiskSizeMB: req.DiskSizeMB},
	}
	if req.Timeout != nil {
		d, err := seconds(*req.Timeout, cfg.MaxTimeout)
		if err != nil {
			return o, err
		}
		o.Timeout = d
	}
	if err := lifecycleOpts(req, &o); err != nil {
		return o, err
	}
	if o.Network, err = s.parseNetwork(context.Background(), team, req.AllowInternetAccess, req.Network); err != nil {
		return o, err
	}
	if o.Network != nil {
		o.PrivateTraffic = o.Network.AllowPublicTraffic != nil && !*o.Network.AllowPublicTraffic
	}
	if err := validateStrings(o.Metadata, "metadata"); err != nil {
		return o, err
	}
	if o.Volumes, err = s.volumeMounts(team, req.VolumeMounts); err != nil {
		return o, err
	}
	return o, validateEnv(o.EnvVars)
}

// seconds validates a timeout in seconds.
func seconds(v int64, max time.Duration) (time.Duration, error) {
	if v <= 0 || v > int64(max/time.Second) {
		return 0, fmt.Errorf("%w: timeout must be between 1 and %d seconds, got %d", sandbox.ErrInvalid, int64(max/time.Second), v)
	}
	return time.Duration(v) * time.Second, nil
}

func (s *Server) sandboxResp(in sandbox.Info) sandboxResp {
	r := sandboxResp{
		SandboxID: in.ID, TemplateID: in.TemplateID, Alias: alias(in), ClientID: "sbx",
		EnvdVersion: EnvdVersion, EnvdAccessToken: in.EnvdToken, Domain: s.domain(),
	}
	if in.TrafficTok != "" {
		r.TrafficAccessToken = &in.TrafficTok
	}
	return r
}

func (s *Server) domain() *string {
	if d := s.mgr.Config().Domain; d != "" {
		return &d
	}
	return nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	in, err := s.mgr.Get(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	d := sandboxDetail{listedSandbox: listed(in), Domain: s.domain(), EnvdAccessToken: in.EnvdToken,
		AllowInternetAccess: in.AllowNet, Network: in.Network.Redacted(), Lifecycle: lifecycleOf(in)}
	writeJSON(w, http.StatusOK, d)
}

func listed(in sandbox.Info) listedSandbox {
	return listedSandbox{
		SandboxID: in.ID, TemplateID: in.TemplateID, Alias: alias(in), ClientID: "sbx",
		CPUCount: in.CPUCount, MemoryMB: in.MemoryMB, DiskSizeMB: in.DiskSizeMB,
		EnvdVersion: EnvdVersion, StartedAt: in.StartedAt, EndAt: endAt(in), State: wireState(in.State),
		Metadata: in.Metadata, Runtime: in.Runtime, Volumes: mountsOf(in.Volumes),
	}
}

// endAt is a sandbox's endAt on the wire: a paused one's is when it was
// paused, as E2B's (its snapshot's creation time), not the deadline it
// had while running; a resume sets a new deadline.
func endAt(in sandbox.Info) time.Time {
	if in.State == store.StatePaused && !in.Persist.PausedAt.IsZero() {
		return in.Persist.PausedAt
	}
	return in.EndAt
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	if err := s.mgr.Kill(r.Context(), id); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// setTimeout is POST /sandboxes/{id}/timeout: the sandbox's deadline becomes
// now + timeout seconds (shorter or longer than before); 0 or less means now,
// and past the longest timeout (--max-timeout) means that longest one, as
// E2B's KeepAliveFor clamps it to the plan's limit (204, never a 400).
func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req timeoutReq
	if !decode(w, r, &req) {
		return
	}
	if req.Timeout == nil {
		WriteError(w, http.StatusBadRequest, "timeout is required")
		return
	}
	// As E2B: 0 (or less) ends the sandbox's time now, so it times out at
	// once (killed, or paused with lifecycle.onTimeout "pause").
	var d time.Duration
	if *req.Timeout > 0 {
		d = clampSeconds(*req.Timeout, s.mgr.Config().MaxTimeout)
	}
	if err := s.mgr.SetTimeout(r.Context(), id, d); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// clampSeconds is v seconds (v > 0), at most max: E2B clamps a timeout
// (setTimeout) or refresh past the team's limit to it instead of refusing it.
func clampSeconds(v int64, max time.Duration) time.Duration {
	return time.Duration(min(v, int64(max/time.Second))) * time.Second
}

// minRefresh is the least a refresh extends a sandbox by, as E2B's
// refreshes route raises a shorter duration to its default timeout (15 s).
const minRefresh = 15 * time.Second

// refresh is POST /sandboxes/{id}/refreshes (older SDKs' keep-alive): the
// deadline moves to now + duration seconds if that is later; no duration
// is the default timeout, and a duration is held between minRefresh and
// the longest timeout, as on E2B.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req refreshReq
	if !decode(w, r, &req) {
		return
	}
	d := s.mgr.Config().DefaultTimeout
	if req.Duration != nil {
		d = max(minRefresh, clampSeconds(*req.Duration, s.mgr.Config().MaxTimeout))
	}
	if err := s.mgr.Extend(r.Context(), id, d); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connect returns a running sandbox (200), extending its deadline if the
// requested timeout is later, or resumes a paused one (201); {"memory":
// false} (onResume: "reboot") restarts it over its saved files instead.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	id, ok := sandboxID(w, r)
	if !ok {
		return
	}
	var req struct {
		Timeout *int64 `json:"timeout"`
		Memory  *bool  `json:"memory"`
	}
	if !decode(w, r, &req) {
		return
	}
	d := s.mgr.Config().DefaultTimeout
	var err error
	if req.Timeout != nil {
		d, err = seconds(*req.Timeout, s.mgr.Config().MaxTimeout)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if req.Timeout == nil { // no timeout asked: a running sandbox keeps its own
		if in, gerr := s.mgr.Get(id); gerr == nil && in.State == store.StateRunning {
			writeJSON(w, http.StatusOK, s.sandboxResp(in))
			return
		}
	}
	release, err := s.reserveResume(r, id)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer release()
	in, resumed, err := s.mgr.Connect(r.Context(), id, d, req.Memory != nil && !*req.Memory)
	if err != nil {
		writeErr(w, err)
		return
	}
	status := http.StatusOK
	if resumed {
		status = http.StatusCreated
	}
	writeJSON(w, status, s.sandboxResp(in))
}

// alias is the template name a sandbox runs (E2B's alias): the name the
// template had at create, else its id.
func alias(in sandbox.Info) string {
	if in.Alias != "" {
		return in.Alias
	}
	return in.TemplateID
}
