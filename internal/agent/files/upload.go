package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// written is one item of the POST /files answer.
type written struct {
	Path     string            `json:"path"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// upload serves POST /files. All files of a request are staged first and
// renamed into place only when every one was written: a failed request
// changes no file (missing parent directories may remain).
func (h *handler) upload(w http.ResponseWriter, r *http.Request) {
	out, err := h.receive(r)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// uploadReq is what every body form needs to stage its files.
type uploadReq struct {
	user identity.User
	md   map[string]string
	seen map[string]bool
	done []*staged
}

func (h *handler) receive(r *http.Request) ([]written, error) {
	if err := authorize(r, h.state, OpWrite); err != nil {
		return nil, err
	}
	u, err := h.caller(r)
	if err != nil {
		return nil, err
	}
	md, err := parseMetadata(r.Header)
	if err != nil {
		return nil, err
	}
	body, err := decodedBody(r)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	r.Body = body
	up := &uploadReq{user: u, md: md, seen: map[string]bool{}}
	if err := h.readBody(r, up); err != nil {
		up.abort()
		return nil, err
	}
	return up.commit()
}

// readBody stages the files of an octet-stream or multipart body.
func (h *handler) readBody(r *http.Request, up *uploadReq) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "application/octet-stream":
		if !r.URL.Query().Has("path") {
			return withStatus(http.StatusBadRequest, errors.New("path query parameter is required for raw body upload"))
		}
		return up.add(r.URL.Query().Get("path"), r.Body)
	case strings.HasPrefix(mt, "multipart/"):
		return readMultipart(r, up)
	}
	return withStatus(http.StatusBadRequest, fmt.Errorf("unsupported content type %q, expected multipart/form-data or application/octet-stream", r.Header.Get("Content-Type")))
}

// add resolves path for the user and stages one file from src.
func (up *uploadReq) add(path string, src io.Reader) error {
	p, err := fsutil.Resolve(path, up.user)
	if err != nil {
		return err
	}
	if up.seen[p] {
		return fmt.Errorf("%w: you cannot upload multiple files to the same path '%s' in one upload request", fsutil.ErrInvalid, p)
	}
	up.seen[p] = true
	s, err := stage(p, src, up.user, up.md)
	if err != nil {
		return err
	}
	up.done = append(up.done, s)
	return nil
}

// commit renames every staged file into place, in order.
func (up *uploadReq) commit() ([]written, error) {
	out := make([]written, 0, len(up.done))
	for i, s := range up.done {
		if err := s.commit(); err != nil {
			(&uploadReq{done: up.done[i+1:]}).abort()
			return nil, err
		}
		out = append(out, written{Path: s.dst, Name: filepath.Base(s.dst), Type: "file", Metadata: up.md})
	}
	return out, nil
}

func (up *uploadReq) abort() {
	for _, s := range up.done {
		s.abort()
	}
}
