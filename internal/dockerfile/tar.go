package dockerfile

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// TarContext writes to w the gzipped tar the SDK uploads for a COPY of
// src: the files FilesHash hashes, each under its path relative to
// contextDir, directories without recursing (their contents are entries of
// their own), symlinks as symlinks.
func TarContext(w io.Writer, contextDir, src string, ignore []string) error {
	root, files, err := collect(contextDir, src, ignore)
	if err != nil {
		return err
	}
	defer root.Close()
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := addTarEntry(tw, root, f); err != nil {
			return fmt.Errorf("archiving %s: %w", f.rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archiving: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archiving: %w", err)
	}
	return nil
}

// addTarEntry writes one entry of root; sockets, devices and fifos are
// skipped, as the context root is (it has no name).
func addTarEntry(tw *tar.Writer, root *os.Root, f entry) error {
	if f.rel == "" {
		return nil
	}
	fi, err := root.Lstat(f.rel)
	if err != nil {
		return err
	}
	link := ""
	if fi.Mode()&os.ModeSymlink != 0 {
		if link, err = root.Readlink(f.rel); err != nil {
			return err
		}
	} else if !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name = f.rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	return copyFile(tw, root, f.rel)
}

func copyFile(w io.Writer, root *os.Root, name string) error {
	r, err := root.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}
