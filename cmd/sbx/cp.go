package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/client"
)

// cpCmd is `sbx cp SRC DST`, like docker cp: one side is ID:PATH (a path in
// the sandbox), the other a local path. A file is copied as is; a directory
// as a tar stream (tar runs in the sandbox), so modes and symlinks survive.
// A local path that contains ':' is written ./a:b.
type cpCmd struct {
	User string `short:"u" help:"sandbox user that reads or owns the files (default: the template's user)"`
	Src  string `arg:"" name:"src" help:"ID:PATH or a local path"`
	Dst  string `arg:"" name:"dst" help:"ID:PATH or a local path"`
}

// Help is the long help of sbx cp.
func (*cpCmd) Help() string {
	return `Copies SRC to DST. Exactly one of them is ID:PATH, a path in sandbox ID.
If DST is an existing directory, SRC is copied into it under its own name;
otherwise SRC is copied to DST (a directory's contents into a new DST).
Local files from the sandbox are unpacked only inside DST: entries that
would land outside it are refused.`
}

// sandboxPathArg splits "ID:PATH"; ok is false for a local path.
func sandboxPathArg(s string) (id, p string, ok bool) {
	id, p, ok = strings.Cut(s, ":")
	if !ok || id == "" || strings.ContainsAny(id, `/\.`) {
		return "", "", false
	}
	return id, p, true
}

func (c *cpCmd) run(e *env) int {
	srcID, srcPath, srcRemote := sandboxPathArg(c.Src)
	dstID, dstPath, dstRemote := sandboxPathArg(c.Dst)
	if srcRemote == dstRemote {
		e.errorf("exactly one of SRC and DST must be ID:PATH (got %q, %q)", c.Src, c.Dst)
		return exitUsage
	}
	id, remote := srcID, srcPath
	if dstRemote {
		id, remote = dstID, dstPath
	}
	if remote == "" {
		e.errorf("empty path in %s:", id)
		return exitUsage
	}
	sc, code := connectSandbox(e, id)
	if sc == nil {
		return code
	}
	var err error
	if srcRemote {
		err = c.download(e, sc, srcPath, c.Dst)
	} else {
		err = c.upload(e, sc, c.Src, dstPath)
	}
	switch {
	case err != nil && e.ctx.Err() != nil:
		return sandboxError(e, id, err)
	case err != nil:
		e.errorf("%v", err)
		return 1
	}
	return 0
}

// download copies the sandbox's src to the local dst.
func (c *cpCmd) download(e *env, sc *client.SandboxConn, src, dst string) error {
	info, err := sc.Stat(e.ctx, src)
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%s:%s: no such file or directory", sc.ID(), src)
	}
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, path.Base(info.Path))
	}
	if info.Type != "dir" {
		return downloadFile(e, sc, info, dst)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return downloadDir(e, sc, info.Path, dst, c.User)
}

func downloadFile(e *env, sc *client.SandboxConn, info *client.EntryInfo, dst string) error {
	r, err := sc.OpenFile(e.ctx, info.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode.Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("copying %s: %w", info.Path, err)
	}
	return f.Close()
}

// upload copies the local src to the sandbox's dst.
func (c *cpCmd) upload(e *env, sc *client.SandboxConn, src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	info, err := sc.Stat(e.ctx, dst)
	switch {
	case err == nil && info.Type == "dir":
		dst = path.Join(info.Path, filepath.Base(filepath.Clean(src)))
	case err != nil && !errors.Is(err, client.ErrNotFound):
		return err
	}
	if !fi.IsDir() {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		return sc.WriteFileFrom(e.ctx, dst, f, c.User)
	}
	return uploadDir(e, sc, src, dst, c.User)
}
