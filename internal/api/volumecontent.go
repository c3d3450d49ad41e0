package api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/volume"
)

// The volume content API (E2B's openapi-volumecontent.yml): a volume's
// files without a sandbox, authorised by the volume's own bearer token
// (VolumeAndToken.token), not by an API key.

// contentTimeout bounds one file transfer of the content API.
const contentTimeout = time.Hour

func (s *Server) contentRoutes() {
	c := func(pattern string, fn contentHandler) { s.handleOther(pattern, s.contentAuth(fn)) }
	c("GET /volumecontent/{vid}/path", s.contentStat)
	c("PATCH /volumecontent/{vid}/path", s.contentSetMeta)
	c("DELETE /volumecontent/{vid}/path", s.contentRemove)
	c("GET /volumecontent/{vid}/dir", s.contentList)
	c("POST /volumecontent/{vid}/dir", s.contentMkdir)
	c("GET /volumecontent/{vid}/file", s.contentRead)
	c("PUT /volumecontent/{vid}/file", s.contentWrite)
}

// contentHandler serves one content request on the volume's open root
// with the request's clean path.
type contentHandler func(w http.ResponseWriter, r *http.Request, root *volume.Root, p string)

// contentAuth checks the bearer token against the volume's (contentGate),
// opens the volume's root and cleans the path query parameter. The request
// then acts for the volume's team: its audit record names that team.
func (s *Server) contentAuth(fn contentHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		v, ok := s.contentGate(sw, r)
		if !ok {
			return
		}
		r = withPrincipal(r, Principal{Team: v.Owner})
		defer func() { s.record(r, "volume:"+v.ID, sw.status) }()
		p, err := volume.Clean(r.URL.Query().Get("path"))
		if err != nil {
			writeErr(sw, err)
			return
		}
		root, err := s.vols.Root(r.Context(), v.ID)
		if err != nil {
			writeErr(sw, err)
			return
		}
		defer root.Close()
		fn(sw, r, root, p)
	})
}

// contentGate returns the volume the request's token opens, holding the
// request to the API's rate limits as gate holds an API key's: a token
// that opens no volume is answered 401 (audited) within its remote
// address's bucket of unauthenticated requests, a volume's token draws on
// its team's bucket, which the team's keys share. Every content call is
// audited, and before, neither was limited: a client with no key at all
// wrote 14 MB of audit log in 10 s through 401s here, and a volume's token
// (handed to sandboxes) was a way around its team's API rate. ok is false
// when the answer (401 or 429) has been written.
func (s *Server) contentGate(w http.ResponseWriter, r *http.Request) (*store.Volume, bool) {
	v := s.contentVolume(r)
	if v == nil {
		s.refuse401(w, r, "invalid or missing volume token (Authorization: Bearer)")
		return nil, false
	}
	team := publicTeamID(v.Owner)
	if s.limited(w, r, s.teamLim, team, "volume:"+v.ID, map[string]string{"team": team, "remote": remoteHost(r)}) {
		return nil, false
	}
	return v, true
}

// contentVolume returns the volume the request's token opens, or nil.
func (s *Server) contentVolume(r *http.Request) *store.Volume {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	v, err := s.vols.ByID(r.Context(), r.PathValue("vid")) // the token decides, not an API key
	if !ok || err != nil || !volume.Authorize(v, strings.TrimSpace(tok)) {
		return nil
	}
	return v
}

func (s *Server) contentStat(w http.ResponseWriter, _ *http.Request, root *volume.Root, p string) {
	e, err := root.Stat(p)
	answer(w, http.StatusOK, e, err)
}

func (s *Server) contentList(w http.ResponseWriter, r *http.Request, root *volume.Root, p string) {
	depth := 1
	if d := r.URL.Query().Get("depth"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil {
			WriteError(w, http.StatusBadRequest, "depth must be an integer")
			return
		}
		depth = n
	}
	es, err := root.List(p, depth)
	answer(w, http.StatusOK, es, err)
}

func (s *Server) contentMkdir(w http.ResponseWriter, r *http.Request, root *volume.Root, p string) {
	m, force, ok := queryMeta(w, r)
	if !ok {
		return
	}
	e, err := root.Mkdir(p, force, m)
	answer(w, http.StatusCreated, e, err)
}

func (s *Server) contentSetMeta(w http.ResponseWriter, r *http.Request, root *volume.Root, p string) {
	var m volume.Meta
	var body struct {
		UID  *uint32 `json:"uid"`
		GID  *uint32 `json:"gid"`
		Mode *uint32 `json:"mode"`
	}
	if !decode(w, r, &body) {
		return
	}
	m.UID, m.GID, m.Mode = body.UID, body.GID, body.Mode
	if err := m.Check(); err != nil {
		writeErr(w, err)
		return
	}
	e, err := root.SetMeta(p, m)
	answer(w, http.StatusOK, e, err)
}

func (s *Server) contentRemove(w http.ResponseWriter, _ *http.Request, root *volume.Root, p string) {
	if err := root.Remove(p); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) contentRead(w http.ResponseWriter, r *http.Request, root *volume.Root, p string) {
	f, size, err := root.Open(p)
	if err != nil {
		writeErr(w, err)
		return
	}
	defer f.Close()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(contentTimeout))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.CopyN(w, f, size)
}

func (s *Server) contentWrite(w http.ResponseWriter, r *http.Request, root *volume.Root, p string) {
	m, _, ok := queryMeta(w, r)
	if !ok {
		return
	}
	// The body is bounded by the volume's size (its filesystem), not here.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(contentTimeout))
	e, err := root.Write(p, r.Body, m)
	answer(w, http.StatusCreated, e, err)
}

// queryMeta reads uid, gid, mode and force from the query.
func queryMeta(w http.ResponseWriter, r *http.Request) (volume.Meta, bool, bool) {
	q := r.URL.Query()
	var m volume.Meta
	for _, f := range []struct {
		name string
		dst  **uint32
	}{{"uid", &m.UID}, {"gid", &m.GID}, {"mode", &m.Mode}} {
		if v := q.Get(f.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				WriteError(w, http.StatusBadRequest, f.name+" must be an unsigned integer")
				return m, false, false
			}
			u := uint32(n)
			*f.dst = &u
		}
	}
	if err := m.Check(); err != nil {
		writeErr(w, err)
		return m, false, false
	}
	force, _ := strconv.ParseBool(q.Get("force"))
	return m, force, true
}

// answer writes v with status, or err's status.
func answer(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, status, v)
}
