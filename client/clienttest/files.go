package clienttest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/filesystem"
	"github.com/sbx-dev/sbx/api/proto/envd/filesystem/filesystemconnect"
)

// files serves envd's GET and POST /files (octet-stream bodies only).
func (s *Server) files(w http.ResponseWriter, r *http.Request) {
	sb, p := info(r.Context()).sb, r.URL.Query().Get("path")
	if p == "" || !strings.HasPrefix(p, "/") {
		WriteError(w, http.StatusBadRequest, "path must be absolute")
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		data, ok := sb.Files[p]
		s.mu.Unlock()
		if !ok {
			WriteError(w, http.StatusNotFound, "file %s not found", p)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	case http.MethodPost:
		s.upload(w, r, sb, p)
	default:
		WriteError(w, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
	}
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request, sb *Sandbox, p string) {
	if r.Header.Get("Content-Type") != "application/octet-stream" {
		WriteError(w, http.StatusBadRequest, "fake supports only application/octet-stream")
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "reading body: %v", err)
		return
	}
	s.mu.Lock()
	sb.Files[p] = data
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, []map[string]string{{"path": p, "name": path.Base(p), "type": "file"}})
}

type fsHandler struct {
	filesystemconnect.UnimplementedFilesystemHandler
	s *Server
}

func (h *fsHandler) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	entries := h.s.entries(info(ctx).sb, req.Msg.GetPath(), 0)
	if len(entries) == 0 {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("%s not found", req.Msg.GetPath()))
	}
	return connect.NewResponse(&filesystem.StatResponse{Entry: entries[0]}), nil
}

func (h *fsHandler) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	entries := h.s.entries(info(ctx).sb, req.Msg.GetPath(), int(req.Msg.GetDepth()))
	if len(entries) == 0 || entries[0].GetType() != filesystem.FileType_FILE_TYPE_DIRECTORY {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("directory %s not found", req.Msg.GetPath()))
	}
	return connect.NewResponse(&filesystem.ListDirResponse{Entries: entries[1:]}), nil
}

// entries returns p itself, then everything under it up to depth levels.
// Directories are implied by the files under them.
func (s *Server) entries(sb *Sandbox, p string, depth int) []*filesystem.EntryInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	p = path.Clean(p)
	if data, ok := sb.Files[p]; ok {
		return []*filesystem.EntryInfo{entry(p, filesystem.FileType_FILE_TYPE_FILE, len(data))}
	}
	seen := map[string]*filesystem.EntryInfo{}
	for f, data := range sb.Files {
		rel, ok := strings.CutPrefix(f, strings.TrimSuffix(p, "/")+"/")
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		for i := 0; i < len(parts) && i < depth; i++ {
			name := path.Join(p, strings.Join(parts[:i+1], "/"))
			if i == len(parts)-1 {
				seen[name] = entry(name, filesystem.FileType_FILE_TYPE_FILE, len(data))
			} else if seen[name] == nil {
				seen[name] = entry(name, filesystem.FileType_FILE_TYPE_DIRECTORY, 0)
			}
		}
	}
	return dirListing(p, seen, hasPrefix(sb.Files, p))
}

func dirListing(p string, seen map[string]*filesystem.EntryInfo, exists bool) []*filesystem.EntryInfo {
	if !exists {
		return nil
	}
	out := []*filesystem.EntryInfo{entry(p, filesystem.FileType_FILE_TYPE_DIRECTORY, 0)}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, seen[n])
	}
	return out
}

func hasPrefix(files map[string][]byte, dir string) bool {
	for f := range files {
		if dir == "/" || strings.HasPrefix(f, dir+"/") {
			return true
		}
	}
	return false
}

func entry(p string, t filesystem.FileType, size int) *filesystem.EntryInfo {
	perm, mode := "-rw-r--r--", uint32(0o644)
	if t == filesystem.FileType_FILE_TYPE_DIRECTORY {
		perm, mode = "drwxr-xr-x", 0o755
	}
	return &filesystem.EntryInfo{Name: path.Base(p), Type: t, Path: p, Size: int64(size), Mode: mode,
		Permissions: perm, Owner: DefaultUser, Group: DefaultUser}
}
