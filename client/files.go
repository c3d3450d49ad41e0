package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/api/proto/envd/filesystem"
)

// maxReadFile bounds ReadFile; larger files need a streaming reader.
const maxReadFile = 1 << 30

// EntryInfo describes a file in a sandbox.
type EntryInfo struct {
	Name          string
	Type          string // "file" or "dir"; a symlink has its target's type (SymlinkTarget set), "" when it dangles
	Path          string
	Size          int64
	Mode          os.FileMode // permission bits as envd reports them
	Permissions   string      // e.g. "-rw-r--r--"
	Owner, Group  string
	ModTime       time.Time
	SymlinkTarget string
	Metadata      map[string]string
}

// ReadFile returns the contents of the file at path (GET /files).
func (s *SandboxConn) ReadFile(ctx context.Context, path string) ([]byte, error) {
	resp, err := s.files(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReadFile+1))
	if err == nil && len(data) > maxReadFile {
		err = fmt.Errorf("file larger than %d bytes", maxReadFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// OpenFile streams the file at path (GET /files); the caller closes it.
func (s *SandboxConn) OpenFile(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := s.files(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return resp.Body, nil
}

// WriteFile creates or replaces the file at path with data, creating parent
// directories, owned by user ("" = the sandbox's default user). It uses
// POST /files with an application/octet-stream body.
func (s *SandboxConn) WriteFile(ctx context.Context, path string, data []byte, user string) error {
	return s.WriteFileFrom(ctx, path, bytes.NewReader(data), user)
}

// WriteFileFrom is WriteFile with the content streamed from r.
func (s *SandboxConn) WriteFileFrom(ctx context.Context, path string, r io.Reader, user string) error {
	resp, err := s.files(ctx, http.MethodPost, path, user, r)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	resp.Body.Close()
	return nil
}

// files sends one /files request and returns its 2xx response.
func (s *SandboxConn) files(ctx context.Context, method, path, user string, body io.Reader) (*http.Response, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty path", ErrBadRequest)
	}
	q := url.Values{"path": {path}}
	if user != "" {
		q.Set("username", user)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.baseURL+"/files?"+q.Encode(), body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, parseAPIError(resp)
	}
	return resp, nil
}

// Stat describes the file at path.
func (s *SandboxConn) Stat(ctx context.Context, path string) (*EntryInfo, error) {
	resp, err := s.fs.Stat(ctx, connect.NewRequest(&filesystem.StatRequest{Path: path}))
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, rpcErr(err))
	}
	e := entryInfo(resp.Msg.GetEntry())
	return &e, nil
}

// ListDir lists the directory at path, descending depth levels (1 = only
// its entries; 0 is taken as 1, as in the E2B SDK).
func (s *SandboxConn) ListDir(ctx context.Context, path string, depth int) ([]EntryInfo, error) {
	if depth < 0 {
		return nil, fmt.Errorf("list %s: %w: negative depth %d", path, ErrBadRequest, depth)
	}
	resp, err := s.fs.ListDir(ctx, connect.NewRequest(&filesystem.ListDirRequest{Path: path, Depth: uint32(max(depth, 1))}))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, rpcErr(err))
	}
	out := []EntryInfo{}
	for _, e := range resp.Msg.GetEntries() {
		if e.GetType() != filesystem.FileType_FILE_TYPE_UNSPECIFIED {
			out = append(out, entryInfo(e))
		}
	}
	return out, nil
}

var fileTypes = map[filesystem.FileType]string{
	filesystem.FileType_FILE_TYPE_FILE:      "file",
	filesystem.FileType_FILE_TYPE_DIRECTORY: "dir",
	filesystem.FileType_FILE_TYPE_SYMLINK:   "symlink",
}

func entryInfo(e *filesystem.EntryInfo) EntryInfo {
	info := EntryInfo{
		Name: e.GetName(), Type: fileTypes[e.GetType()], Path: e.GetPath(), Size: e.GetSize(),
		Mode: os.FileMode(e.GetMode()), Permissions: e.GetPermissions(), Owner: e.GetOwner(),
		Group: e.GetGroup(), SymlinkTarget: e.GetSymlinkTarget(), Metadata: e.GetMetadata(),
	}
	if e.GetModifiedTime() != nil {
		info.ModTime = e.GetModifiedTime().AsTime()
	}
	return info
}
