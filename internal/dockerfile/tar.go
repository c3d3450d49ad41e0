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
	files, err := collect(contextDir, src, ignore)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := addTarEntry(tw, f); err != nil {
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

// addTarEntry writes one entry; sockets, devices and fifos are skipped, as
// the context root is (it has no name).
func addTarEntry(tw *tar.Writer, f entry) error {
	fi, err := os.Lstat(f.full)
	if err != nil || f.rel == "" {
		return err
	}
	link := ""
	if fi.Mode()&os.ModeSymlink != 0 {
		if link, err = os.Readlink(f.full); err != nil {
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
	return copyFile(tw, f.full)
}

func copyFile(w io.Writer, name string) error {
	r, err := os.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}
