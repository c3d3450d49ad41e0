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

// upload serves POST /files. Each file is written in place as its part
// arrives (see writeFile), as envd does: if a part fails, the files before
// it stay written and the request answers the error.
func (h *handler) upload(w http.ResponseWriter, r *http.Request) {
	out, err := h.receive(r)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// uploadReq is what every body form needs to write its files.
type uploadReq struct {
	user identity.User
	md   map[string]string
	seen map[string]bool
	done []written
}

func (h *handler) receive(r *http.Request) ([]written, error) {
	signed, err := authorize(r, h.state, OpWrite)
	if err != nil {
		return nil, err
	}
	u, err := h.caller(r, signed)
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
		return nil, err
	}
	return up.done, nil
}

// readBody writes the files of an octet-stream or multipart body.
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

// add resolves path for the user and writes one file from src.
func (up *uploadReq) add(path string, src io.Reader) error {
	p, err := fsutil.Resolve(path, up.user)
	if err != nil {
		return err
	}
	if up.seen[p] {
		return fmt.Errorf("%w: you cannot upload multiple files to the same path '%s' in one upload request, only the first specified file was uploaded", fsutil.ErrInvalid, p)
	}
	up.seen[p] = true
	if err := writeFile(p, src, up.user, up.md); err != nil {
		return err
	}
	up.done = append(up.done, written{Path: p, Name: filepath.Base(p), Type: "file", Metadata: up.md})
	return nil
}
