package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// busyboxLayer: /bin/busybox, a link per applet at its usual place, and the
// few files of etc the official busybox image has (root only).
func busyboxLayer(store *blobStore, bin string, level int) (*fileLayer, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("busybox: %w (apt-get install -y busybox-static)", err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("busybox %s: %w", bin, err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("busybox %s is dynamically linked: install busybox-static", bin)
		}
	}
	var applets []string
	if out, err := exec.Command(bin, "--list-full").Output(); err == nil {
		applets = strings.Fields(string(out))
	}
	if len(applets) < 10 {
		applets = nil
		for _, a := range strings.Fields("sh ash cat cp echo false id ln ls mkdir mv ps pwd rm sed sleep true uname whoami") {
			applets = append(applets, "bin/"+a)
		}
	}
	return tarLayer(store, level, func(tw *tar.Writer) error {
		for _, d := range []struct {
			name string
			mode int64
		}{{"bin", 0o755}, {"dev", 0o755}, {"etc", 0o755}, {"home", 0o755}, {"proc", 0o555}, {"root", 0o700},
			{"sbin", 0o755}, {"sys", 0o555}, {"tmp", 0o1777}, {"usr", 0o755}, {"usr/bin", 0o755},
			{"usr/sbin", 0o755}, {"var", 0o755}, {"var/tmp", 0o1777}} {
			if err := writeDir(tw, d.name, d.mode); err != nil {
				return err
			}
		}
		if err := writeFile(tw, "bin/busybox", 0o755, data); err != nil {
			return err
		}
		for _, f := range []struct{ name, data string }{
			{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"},
			{"etc/group", "root:x:0:\n"},
			{"etc/shadow", "root:*::0:::::\n"},
		} {
			mode := int64(0o644)
			if f.name == "etc/shadow" {
				mode = 0o600
			}
			if err := writeFile(tw, f.name, mode, []byte(f.data)); err != nil {
				return err
			}
		}
		dirs := map[string]bool{"bin": true, "sbin": true, "usr/bin": true, "usr/sbin": true, ".": true}
		seen := map[string]bool{"bin/busybox": true}
		for _, a := range applets {
			a = strings.TrimPrefix(path.Clean("/"+a), "/")
			if seen[a] || !dirs[path.Dir(a)] {
				continue
			}
			seen[a] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch}); err != nil {
				return err
			}
		}
		return nil
	})
}

const user = "user"

// noUserEdit says what the no-user tree does with an entry: drop it, or
// replace a file's content (edit != nil).
func noUserEdit(rel string) (drop bool, edit func([]byte) []byte) {
	switch {
	case rel == "home/"+user || strings.HasPrefix(rel, "home/"+user+"/"), rel == "etc/sudoers.d/"+user, rel == "var/mail/"+user:
		return true, nil
	}
	switch strings.TrimSuffix(rel, "-") { // etc/passwd- & co are the previous versions
	case "etc/passwd", "etc/shadow", "etc/subuid", "etc/subgid":
		return false, func(b []byte) []byte { return editDB(b, nil) }
	case "etc/group":
		return false, func(b []byte) []byte { return editDB(b, []int{3}) }
	case "etc/gshadow":
		return false, func(b []byte) []byte { return editDB(b, []int{2, 3}) }
	}
	return false, nil
}

// editDB drops the line of `user` from a colon-separated database and
// removes it from the member lists in the given fields.
func editDB(b []byte, lists []int) []byte {
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimSuffix(line, "\n")
		f := strings.Split(body, ":")
		if f[0] == user {
			continue
		}
		for _, i := range lists {
			if i < len(f) && f[i] != "" {
				var keep []string
				for _, m := range strings.Split(f[i], ",") {
					if m != user {
						keep = append(keep, m)
					}
				}
				f[i] = strings.Join(keep, ",")
			}
		}
		out.WriteString(strings.Join(f, ":"))
		if strings.HasSuffix(line, "\n") {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

type inode struct{ dev, ino uint64 }

// rootfsLayers walks the rootfs once and writes the full tree and the tree
// without `user` side by side; each compresses on its own goroutine.
func rootfsLayers(store *blobStore, rootfs string, level int) (full, nouser *fileLayer, err error) {
	a, err := newLayerWriter(store, level, true)
	if err != nil {
		return nil, nil, err
	}
	b, err := newLayerWriter(store, level, true)
	if err != nil {
		a.abort()
		return nil, nil, err
	}
	droppedUser := false
	linksA, linksB := map[inode]string{}, map[inode]string{}
	buf := make([]byte, 1<<20)
	walkErr := filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootfs, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name = rel
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", "" // the host's names for the ids mean nothing here
		dropB, edit := noUserEdit(rel)
		if dropB && fi.IsDir() && rel == "home/"+user {
			droppedUser = true
		}

		if !fi.Mode().IsRegular() {
			if err := a.tw.WriteHeader(hdr); err != nil {
				return err
			}
			if !dropB {
				return b.tw.WriteHeader(hdr)
			}
			return nil
		}

		// regular file: a hard link to an earlier entry, or its content
		hA, hB := *hdr, *hdr
		var key inode
		linked := false
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			key, linked = inode{uint64(st.Dev), st.Ino}, true
		}
		needA, needB := true, !dropB
		if linked {
			if first, ok := linksA[key]; ok {
				hA.Typeflag, hA.Linkname, hA.Size, needA = tar.TypeLink, first, 0, false
				if err := a.tw.WriteHeader(&hA); err != nil {
					return err
				}
			} else {
				linksA[key] = rel
			}
			if !dropB && edit == nil {
				if first, ok := linksB[key]; ok {
					hB.Typeflag, hB.Linkname, hB.Size, needB = tar.TypeLink, first, 0, false
					if err := b.tw.WriteHeader(&hB); err != nil {
						return err
					}
				} else {
					linksB[key] = rel
				}
			}
		}
		if !needA && !needB {
			return nil
		}
		if edit != nil {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if needA {
				if err := a.tw.WriteHeader(&hA); err != nil {
					return err
				}
				if _, err := a.tw.Write(data); err != nil {
					return err
				}
			}
			if needB {
				data = edit(data)
				hB.Size = int64(len(data))
				if err := b.tw.WriteHeader(&hB); err != nil {
					return err
				}
				if _, err := b.tw.Write(data); err != nil {
					return err
				}
			}
			return nil
		}
		var ws []io.Writer
		if needA {
			if err := a.tw.WriteHeader(&hA); err != nil {
				return err
			}
			ws = append(ws, a.tw)
		}
		if needB {
			if err := b.tw.WriteHeader(&hB); err != nil {
				return err
			}
			ws = append(ws, b.tw)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(io.MultiWriter(ws...), f, buf)
		if err == nil && n != hdr.Size {
			err = fmt.Errorf("%s changed size while being read", p)
		}
		return err
	})
	if walkErr != nil {
		a.abort()
		b.abort()
		return nil, nil, walkErr
	}
	if !droppedUser {
		log.Printf("warning: %s has no home/%s: debian-nouser:1 differs from debian:bookworm in passwd & co only", rootfs, user)
	}
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); full, errA = a.finish() }()
	nouser, errB = b.finish()
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		return nil, nil, err
	}
	return full, nouser, nil
}
