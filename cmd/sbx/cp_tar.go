package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sbx-dev/sbx/client"
)

// downloadDir runs tar in the sandbox on dir and unpacks its output into
// the local directory dst.
func downloadDir(e *env, sc *client.SandboxConn, dir, dst, user string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := untar(pr, dst)
		if err == nil {
			_, _ = io.Copy(io.Discard, pr) // tar's padding after the end marker
		}
		pr.CloseWithError(err) // a failed unpack stops tar (and Run kills it)
		done <- err
	}()
	var stderr bytes.Buffer
	exit, err := sc.Run(e.ctx, client.RunRequest{Argv: []string{"tar", "-C", dir, "-cf", "-", "."}, User: user}, pw, &stderr)
	pw.CloseWithError(err)
	uerr := <-done
	switch {
	case uerr != nil:
		return fmt.Errorf("unpacking into %s: %w", dst, uerr)
	case err != nil:
		return err
	case exit != 0:
		return fmt.Errorf("tar in the sandbox exited %d: %s", exit, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// untar unpacks the tar stream r into dir. Every path is resolved inside
// dir (os.Root): an entry that would land outside it (.., absolute, or
// through a symlink) fails the copy. Only files, directories and symlinks
// are unpacked; owners are not kept.
func untar(r io.Reader, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := untarEntry(root, h, tr); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
}

func untarEntry(root *os.Root, h *tar.Header, r io.Reader) error {
	name := path.Clean(strings.TrimPrefix(h.Name, "./"))
	if name == "." {
		return nil
	}
	mode := fs.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, mode|0o700); err != nil {
			return err
		}
		return root.Chmod(name, mode|0o700)
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode|0o200)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		_ = root.Remove(name)
		return root.Symlink(h.Linkname, name)
	}
	return nil // devices, fifos, hard links: skipped
}

// uploadDir streams the local directory src as tar into tar -x in the
// sandbox, which unpacks it into dst (created if missing).
func uploadDir(e *env, sc *client.SandboxConn, src, dst, user string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, src)) }()
	defer pr.Close()
	var stderr bytes.Buffer
	req := client.RunRequest{Argv: []string{"sh", "-c", `mkdir -p -- "$1" && exec tar -C "$1" --no-same-owner -xf -`, "sh", dst},
		User: user, Stdin: pr}
	exit, err := sc.Run(e.ctx, req, io.Discard, &stderr)
	switch {
	case err != nil:
		return err
	case exit != 0:
		return fmt.Errorf("tar in the sandbox exited %d: %s", exit, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// writeTar writes the directory src as a tar stream (paths relative to it).
func writeTar(w io.Writer, src string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return addTarEntry(tw, src, p, d)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func addTarEntry(tw *tar.Writer, src, p string, d fs.DirEntry) error {
	rel, err := filepath.Rel(src, p)
	if err != nil || rel == "." {
		return err
	}
	fi, err := d.Info()
	if err != nil {
		return err
	}
	link := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	case !fi.Mode().IsRegular() && !fi.IsDir():
		return nil // devices, fifos, sockets: skipped
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 0, 0, "", ""
	if fi.IsDir() {
		h.Name += "/"
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
