package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/builder"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// SetBuilder serves E2B's template build API from b (nil: templates are
// listed from the manager only and builds answer 501).
func (s *Server) SetBuilder(b *builder.Service) {
	s.builds = b
	b.SetDiskCheck(s.buildDisk)
	s.uploadKey = make([]byte, 32)
	_, _ = rand.Read(s.uploadKey)
	h := s.handle
	h("POST /v3/templates", s.requestBuild)
	h("GET /templates/{template}/files/{hash}", s.filesLink)
	h("POST /v2/templates/{template}/builds/{build}", s.startBuild)
	h("GET /templates/{template}/builds/{build}/status", s.buildStatus)
	h("GET /templates/{a}/{b}", s.templateSub) // aliases/{alias} and {template}/tags overlap
	h("POST /templates/tags", s.assignTags)
	h("DELETE /templates/tags", s.removeTags)
	h("GET /templates/{template}", s.getTemplate)
	h("PATCH /templates/{template}", s.updateTemplate)
	h("PATCH /v2/templates/{template}", s.updateTemplate) // the CLI's publish/unpublish
	// The upload URL is signed (the SDK sends no API key with it).
	s.handleOther("PUT /sbx/uploads/{template}/{hash}", http.HandlerFunc(s.upload))
}

func (s *Server) requestBuild(w http.ResponseWriter, r *http.Request) {
	var req builder.BuildRequest
	if !decode(w, r, &req) {
		return
	}
	res, err := s.requestOwned(r, req)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// uploadSig signs an upload URL for a template's files of hash until exp.
func (s *Server) uploadSig(template, hash string, exp int64) string {
	m := hmac.New(sha256.New, s.uploadKey)
	fmt.Fprintf(m, "%s\n%s\n%d", template, hash, exp)
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) filesLink(w http.ResponseWriter, r *http.Request) {
	tid, hash := s.scoped(r, r.PathValue("template")), r.PathValue("hash")
	present, err := s.builds.FilesPresent(tid, hash)
	if err != nil {
		writeErr(w, err)
		return
	}
	exp := time.Now().Add(time.Hour).Unix()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	url := fmt.Sprintf("%s://%s/sbx/uploads/%s/%s?expires=%d&signature=%s", scheme, r.Host, tid, hash, exp, s.uploadSig(tid, hash, exp))
	writeJSON(w, http.StatusCreated, map[string]any{"present": present, "url": url})
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	tid, hash := r.PathValue("template"), r.PathValue("hash")
	exp, _ := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	sig := r.URL.Query().Get("signature")
	if exp < time.Now().Unix() || !hmac.Equal([]byte(sig), []byte(s.uploadSig(tid, hash, exp))) {
		if !s.refusedUnauthenticated(w, r, http.StatusForbidden) { // as a request without a key: limited per address
			WriteError(w, http.StatusForbidden, "upload link is invalid or expired; ask GET /templates/{id}/files/{hash} for a new one")
		}
		return
	}
	release, err := s.admitUpload(r.Context(), tid, r.ContentLength) // the team at its disk quota: 429
	if err != nil {
		writeErr(w, err)
		return
	}
	defer release()
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(15 * time.Minute))
	if err := s.builds.Upload(tid, hash, r.Body); err != nil {
		if errors.Is(err, builder.ErrTooLarge) {
			WriteError(w, http.StatusRequestEntityTooLarge, err.Error())
			return
		}
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) startBuild(w http.ResponseWriter, r *http.Request) {
	var spec builder.Spec
	if !decode(w, r, &spec) {
		return
	}
	var err error
	if ref := spec.FromTemplate; ref != "" {
		err = s.useTemplate(r.Context(), teamOf(r), ref, false)
		spec.FromTemplate, spec.BaseName = s.scoped(r, ref), ref
		switch {
		case errors.Is(err, sandbox.ErrNotFound) && s.builds.Hidden(teamOf(r), ref):
			spec.HiddenBase, spec.FromTemplate, err = ref, "", nil // E2B: "no access"
		case errors.Is(err, sandbox.ErrNotFound): // E2B takes the build and fails it at its base step
			spec.MissingBase, spec.FromTemplate, err = ref, "", nil
		}
	}
	tid := s.scoped(r, r.PathValue("template"))
	if err == nil { // the team at its disk quota: 429 now (the build re-checks as it goes)
		err = s.buildDisk(r.Context(), tid, nil)
	}
	if err == nil {
		err = s.builds.StartBuild(r.Context(), tid, r.PathValue("build"), spec)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) buildStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	off := 0
	if v := q.Get("logsOffset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			WriteError(w, http.StatusBadRequest, "logsOffset must be a non-negative integer")
			return
		}
		off = n
	}
	st, err := s.builds.BuildStatus(r.Context(), s.scoped(r, r.PathValue("template")), r.PathValue("build"), off, q.Get("level"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// templateSub serves GET /templates/aliases/{alias} and
// GET /templates/{template}/tags.
func (s *Server) templateSub(w http.ResponseWriter, r *http.Request) {
	a, b := r.PathValue("a"), r.PathValue("b")
	switch {
	case a == "aliases":
		s.templateAlias(w, r, b)
	case b == "tags":
		s.templateTags(w, r, a)
	default:
		WriteError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) templateAlias(w http.ResponseWriter, r *http.Request, alias string) {
	err := s.useTemplate(r.Context(), teamOf(r), alias, false)
	var id string
	var public bool
	if err == nil {
		id, public, err = s.builds.Alias(teamOf(r), alias)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	resp := map[string]any{"templateID": id, "public": public}
	if tt, ok := s.mgr.Templates().(sandbox.TeamTemplates); ok { // sbx's own fields: the defaults a child build keeps
		if t, err := tt.GetFor(teamOf(r), alias); err == nil && t.User != "" && t.Workdir != "" {
			resp["user"], resp["workdir"] = t.User, t.Workdir
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) assignTags(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Target string   `json:"target"`
		Tags   []string `json:"tags"`
	}
	if !decode(w, r, &req) {
		return
	}
	tags, err := builder.NormTags(req.Tags) // the body first, as E2B
	if err == nil {
		err = s.ownTemplate(r.Context(), teamOf(r), req.Target, false)
	}
	var bid string
	if err == nil {
		bid, _, err = s.builds.AssignTags(r.Context(), s.scoped(r, req.Target), tags)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"buildID": bid, "tags": builder.EchoTags(req.Tags)})
}

func (s *Server) removeTags(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	if !decode(w, r, &req) {
		return
	}
	tags, err := builder.NormTags(req.Tags) // the body first, as E2B
	if err == nil {
		err = builder.CheckRemoval(req.Name, tags)
	}
	if err == nil {
		err = s.ownTemplate(r.Context(), teamOf(r), req.Name, false)
	}
	if err == nil {
		err = s.builds.RemoveTags(r.Context(), s.scoped(r, req.Name), tags)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) templateTags(w http.ResponseWriter, r *http.Request, template string) {
	tags, err := s.builds.Tags(r.Context(), s.scoped(r, template))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]map[string]any, 0, len(tags))
	for _, t := range tags {
		out = append(out, map[string]any{"tag": builder.WireTag(t.Tag), "buildID": t.BuildID, "createdAt": t.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) {
	in, err := s.builds.Get(r.Context(), s.scoped(r, r.PathValue("template")))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

func (s *Server) updateTemplate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Public *bool `json:"public"`
	}
	if !decode(w, r, &req) {
		return
	}
	names, err := s.builds.Update(r.Context(), s.scoped(r, r.PathValue("template")), req.Public)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"names": names})
}

// deleteTemplate answers DELETE /templates/{template}: a user template is
// deleted; else a snapshot of that id or name (the SDK's deleteSnapshot).
func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("template")
	var err error = fmt.Errorf("%w", sandbox.ErrNotFound)
	if s.builds != nil {
		err = s.builds.Delete(r.Context(), s.scoped(r, key))
	}
	if errors.Is(err, sandbox.ErrNotFound) {
		err = s.mgr.DeleteOwnedSnapshot(r.Context(), teamOf(r), key)
	}
	if errors.Is(err, sandbox.ErrNotFound) && s.builds == nil {
		if _, terr := s.mgr.Templates().Get(key); terr == nil {
			err = fmt.Errorf("%w: templates are managed with `sbx template`, not deleted through the API", sandbox.ErrNotImpl)
		}
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.mgr.DiskFreed() // a deferred autoPause pause may fit now
	w.WriteHeader(http.StatusNoContent)
}

// templates answers GET /templates.
func (s *Server) templates(w http.ResponseWriter, r *http.Request) {
	if s.builds == nil {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	team := teamOf(r)
	ts, err := s.builds.ListFor(r.Context(), func(owner string, public bool) bool { return public || owner == team })
	if err != nil {
		writeErr(w, err)
		return
	}
	for i, t := range ts {
		ts[i] = s.builds.NamesFor(team, t)
	}
	writeJSON(w, http.StatusOK, ts)
}
