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
	w := &twoLayers{a: a, b: b, linksA: map[inode]string{}, linksB: map[inode]string{}, buf: make([]byte, 1<<20)}
	if err := filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return w.visit(rootfs, p, d)
	}); err != nil {
		a.abort()
		b.abort()
		return nil, nil, err
	}
	if !w.droppedUser {
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

// twoLayers writes one walk of the rootfs into two layers: a, the tree as
// it is, and b, the tree without `user` (noUserEdit). Hard links are kept
// per layer (links*: the first name written of each inode).
type twoLayers struct {
	a, b           *layerWriter
	linksA, linksB map[inode]string
	buf            []byte
	droppedUser    bool // b left out home/user
}

// visit writes the entry at p (under rootfs) into both layers.
func (w *twoLayers) visit(rootfs, p string, d fs.DirEntry) error {
	rel, err := filepath.Rel(rootfs, p)
	if err != nil || rel == "." {
		return err
	}
	rel = filepath.ToSlash(rel)
	fi, err := d.Info()
	if err != nil || fi.Mode()&fs.ModeSocket != 0 {
		return err
	}
	hdr, err := header(p, rel, fi)
	if err != nil {
		return err
	}
	dropB, edit := noUserEdit(rel)
	if dropB && fi.IsDir() && rel == "home/"+user {
		w.droppedUser = true
	}
	if !fi.Mode().IsRegular() {
		if err := w.a.tw.WriteHeader(hdr); err != nil || dropB {
			return err
		}
		return w.b.tw.WriteHeader(hdr)
	}
	hA, hB := *hdr, *hdr
	needA, needB, err := w.links(fi, rel, &hA, &hB, dropB, edit != nil)
	if err != nil || (!needA && !needB) {
		return err
	}
	if edit != nil {
		return w.edited(p, &hA, &hB, needA, needB, edit)
	}
	return w.content(p, hdr.Size, &hA, &hB, needA, needB)
}

// header is the tar header of the entry at p, named rel.
func header(p, rel string, fi fs.FileInfo) (*tar.Header, error) {
	target := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		var err error
		if target, err = os.Readlink(p); err != nil {
			return nil, err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	hdr.Name = rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", "" // the host's names for the ids mean nothing here
	return hdr, nil
}

// links writes a regular file as a hard link to an earlier name of its
// inode in each layer that has one (an edited file is never linked in b),
// and reports which layers still need its content.
func (w *twoLayers) links(fi fs.FileInfo, rel string, hA, hB *tar.Header, dropB, edited bool) (needA, needB bool, err error) {
	needA, needB = true, !dropB
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink <= 1 {
		return needA, needB, nil
	}
	key := inode{uint64(st.Dev), st.Ino}
	if needA, err = linkOrRemember(w.a.tw, w.linksA, key, rel, hA); err != nil {
		return false, false, err
	}
	if !dropB && !edited {
		if needB, err = linkOrRemember(w.b.tw, w.linksB, key, rel, hB); err != nil {
			return false, false, err
		}
	}
	return needA, needB, nil
}

// linkOrRemember writes h as a link to key's first name in seen, or
// remembers rel as that name; need reports whether the content is needed.
func linkOrRemember(tw *tar.Writer, seen map[inode]string, key inode, rel string, h *tar.Header) (need bool, err error) {
	first, ok := seen[key]
	if !ok {
		seen[key] = rel
		return true, nil
	}
	h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
	return false, tw.WriteHeader(h)
}

// edited writes a file that b holds edited: whole, it is small (passwd & co).
func (w *twoLayers) edited(p string, hA, hB *tar.Header, needA, needB bool, edit func([]byte) []byte) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if needA {
		if err := writeEntry(w.a.tw, hA, data); err != nil {
			return err
		}
	}
	if needB {
		data = edit(data)
		hB.Size = int64(len(data))
		return writeEntry(w.b.tw, hB, data)
	}
	return nil
}

func writeEntry(tw *tar.Writer, h *tar.Header, data []byte) error {
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// content streams the file at p (size bytes) into the layers that need it.
func (w *twoLayers) content(p string, size int64, hA, hB *tar.Header, needA, needB bool) error {
	var ws []io.Writer
	for _, l := range []struct {
		need bool
		tw   *tar.Writer
		h    *tar.Header
	}{{needA, w.a.tw, hA}, {needB, w.b.tw, hB}} {
		if !l.need {
			continue
		}
		if err := l.tw.WriteHeader(l.h); err != nil {
			return err
		}
		ws = append(ws, l.tw)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(io.MultiWriter(ws...), f, w.buf)
	if err == nil && n != size {
		err = fmt.Errorf("%s changed size while being read", p)
	}
	return err
}
