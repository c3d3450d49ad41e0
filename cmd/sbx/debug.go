package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/version"
)

// debugCmd is `sbx debug bundle`.
type debugCmd struct {
	Bundle bundleCmd `cmd:"" help:"Collect version, config (secrets redacted), health, metrics and recent logs of the daemon into one tar.gz for a bug report (admin key)."`
}

// bundleCmd writes the bug-report bundle. It needs the admin API key.
type bundleCmd struct {
	Output string `short:"o" help:"file to write (default sbx-debug-<UTC time>.tar.gz)"`
	Lines  int    `default:"5000" help:"recent daemon log lines to include"`
}

// bundleItem is one file of the bundle and the API path it comes from.
type bundleItem struct{ name, path string }

func (b *bundleCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	items := []bundleItem{
		{"version.json", "/sbx/version"},
		{"config.json", "/sbx/debug/config"},
		{"health.json", "/health"},
		{"metrics.txt", "/metrics"},
		{"logs.txt", fmt.Sprintf("/sbx/debug/logs?lines=%d", max(b.Lines, 1))},
	}
	files, problems, err := collect(e, c, items)
	if err != nil {
		e.errorf("the debug bundle needs the daemon's admin API key (--api-key or SBX_API_KEY): %v", err)
		return 1
	}
	return b.write(e, files, problems, len(items))
}

// collect fetches items; a problem is an item that could not be fetched.
// A refused key (403: a team's key) is err: the bundle is not written then,
// as the other admin-only commands fail, rather than made partial.
func collect(e *env, c *client.Client, items []bundleItem) (files map[string][]byte, problems []string, err error) {
	files = map[string][]byte{}
	for _, it := range items {
		body, err := c.Raw(e.ctx, it.path)
		switch {
		case errors.Is(err, client.ErrForbidden):
			return nil, nil, err
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", it.name, err))
			continue
		}
		files[it.name] = body
	}
	return files, problems, nil
}

// write writes the bundle and reports what was not collected; it exits 1
// when nothing of the daemon's was.
func (b *bundleCmd) write(e *env, files map[string][]byte, problems []string, items int) int {
	cv, _ := json.MarshalIndent(version.Get(), "", "  ")
	files["client-version.json"] = cv
	if len(problems) > 0 {
		files["errors.txt"] = []byte(strings.Join(problems, "\n") + "\n")
	}
	out := b.Output
	if out == "" {
		out = "sbx-debug-" + time.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
	}
	if err := writeTarGz(out, files); err != nil {
		e.errorf("%v", err)
		return 1
	}
	for _, p := range problems {
		e.errorf("not collected: %s", p)
	}
	fmt.Fprintf(e.std.out, "wrote %s (%d files)\n", out, len(files))
	if len(problems) == items {
		return 1
	}
	return 0
}

// writeTarGz writes files (sorted by name) into a new tar.gz at path (0600:
// it holds logs).
func writeTarGz(path string, files map[string][]byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	now := time.Now()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		hdr := &tar.Header{Name: "sbx-debug/" + name, Mode: 0o600, Size: int64(len(files[name])), ModTime: now, Typeflag: tar.TypeReg}
		if err = tw.WriteHeader(hdr); err != nil {
			break
		}
		if _, err = tw.Write(files[name]); err != nil {
			break
		}
	}
	err = errors.Join(err, tw.Close(), gz.Close(), f.Close())
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}
