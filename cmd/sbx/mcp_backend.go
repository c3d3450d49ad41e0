package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/mcpserver"
)

func (b *mcpBackend) RunCommand(ctx context.Context, id, cmd, user, cwd string, timeout time.Duration) (mcpserver.CommandResult, error) {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return mcpserver.CommandResult{}, err
	}
	var out, errb bytes.Buffer
	code, err := sc.Run(ctx, client.RunRequest{Cmd: cmd, User: user, Cwd: cwd, Timeout: timeout}, &out, &errb)
	return mcpserver.CommandResult{Stdout: out.String(), Stderr: errb.String(), ExitCode: code}, err
}

func (b *mcpBackend) RunCode(ctx context.Context, id, code, lang string, timeout time.Duration) (mcpserver.CodeResult, error) {
	sc, err := b.conn(ctx, id)
	if err != nil {
		return mcpserver.CodeResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := sc.RunCode(ctx, client.CodeRequest{Code: code, Language: lang})
	if err != nil {
		return mcpserver.CodeResult{}, err
	}
	out := mcpserver.CodeResult{Text: r.Text(), Stdout: r.Stdout, Stderr: r.Stderr, PNGs: r.PNGs()}
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
	return sc.ReadFile(ctx, path)
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
