package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/mcpserver"
)

// What the MCP tools take back from a sandbox is the sandbox's choice and is
// held in the daemon's memory (shared by every tenant) before it is sent:
// each stream of a command keeps mcpMaxOutput bytes, a code cell's stream
// is read up to mcpMaxCode, a file up to mcpMaxFile (larger: a tool error).
// Before, 512 MiB of output or a 512 MiB file went through whole.
const (
	mcpMaxOutput = 1 << 20
	mcpMaxCode   = 4 << 20
	mcpMaxFile   = 4 << 20
)

// headBuffer keeps the first max bytes written to it and counts the rest.
type headBuffer struct {
	b       bytes.Buffer
	max     int
	dropped int64
}

func (h *headBuffer) Write(p []byte) (int, error) {
	k := min(len(p), h.max-h.b.Len())
	h.b.Write(p[:k])
	h.dropped += int64(len(p) - k)
	return len(p), nil
}

// String is what was kept, with a note of what was not.
func (h *headBuffer) String() string {
	if h.dropped == 0 {
		return h.b.String()
	}
	return h.b.String() + fmt.Sprintf("\n[%d more bytes not shown]\n", h.dropped)
}

func (b *mcpBackend) RunCommand(ctx context.Context, id, cmd, user, cwd string, timeout time.Duration) (mcpserver.CommandResult, error) {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return mcpserver.CommandResult{}, err
	}
	out, errb := &headBuffer{max: mcpMaxOutput}, &headBuffer{max: mcpMaxOutput}
	code, err := sc.Run(ctx, client.RunRequest{Cmd: cmd, User: user, Cwd: cwd, Timeout: timeout}, out, errb)
	if err != nil {
		return mcpserver.CommandResult{}, err // no exit code: the command did not run to an end
	}
	return mcpserver.CommandResult{Stdout: out.String(), Stderr: errb.String(), ExitCode: &code}, nil
}

func (b *mcpBackend) RunCode(ctx context.Context, id, code, lang string, timeout time.Duration) (mcpserver.CodeResult, error) {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return mcpserver.CodeResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := sc.RunCode(ctx, client.CodeRequest{Code: code, Language: lang, MaxOutput: mcpMaxCode})
	if err != nil {
		return mcpserver.CodeResult{}, err
	}
	out := mcpserver.CodeResult{Text: r.Text(), Stdout: r.Stdout, Stderr: r.Stderr, PNGs: r.PNGs()}
	if r.Truncated {
		out.Stderr += fmt.Sprintf("\n[output past %d bytes not shown; the cell was stopped]\n", mcpMaxCode)
	}
	if r.Error != nil {
		out.Error = strings.TrimSpace(r.Error.Name + ": " + r.Error.Value + "\n" + r.Error.Traceback)
	}
	return out, nil
}

func (b *mcpBackend) ReadFile(ctx context.Context, id, path string) ([]byte, error) {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return nil, err
	}
	rc, err := sc.OpenFile(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, mcpMaxFile+1))
	if err == nil && len(data) > mcpMaxFile {
		err = fmt.Errorf("read %s: file larger than %d bytes (use the files API)", path, mcpMaxFile)
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

func (b *mcpBackend) WriteFile(ctx context.Context, id, path string, data []byte) error {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return err
	}
	return sc.WriteFile(ctx, path, data, "")
}

func (b *mcpBackend) ListFiles(ctx context.Context, id, path string, depth int) ([]mcpserver.FileEntry, error) {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return nil, err
	}
	es, err := sc.ListDir(ctx, path, depth)
	out := make([]mcpserver.FileEntry, 0, len(es))
	for _, e := range es {
		out = append(out, mcpserver.FileEntry{Path: e.Path, Type: e.Type, Size: e.Size})
	}
	return out, err
}

func (b *mcpBackend) KillSandbox(ctx context.Context, id string) error {
	b.mu.Lock()
	delete(b.conns, id)
	b.mu.Unlock()
	return b.c.Kill(ctx, id)
}

// HasTemplate reports whether the daemon lists a ready template called name.
func (b *mcpBackend) HasTemplate(ctx context.Context, name string) bool {
	ts, err := b.c.Templates(ctx)
	if err != nil {
		return false
	}
	for _, t := range ts {
		ready := t.BuildStatus == "" || t.BuildStatus == "ready"
		if ready && (t.TemplateID == name || slices.Contains(t.Names, name) || slices.Contains(t.Aliases, name)) {
			return true
		}
	}
	return false
}
