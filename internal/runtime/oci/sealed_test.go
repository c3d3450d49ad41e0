package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSealedBinary: the path to execute, named like the binary, leads to a
// fully sealed memfd copy (what crun and runc accept as already cloned; the
// conformance suites run them from it), the copy cannot be written, and a
// change of the file on disk is picked up by the next command.
func TestSealedBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tool")
	write := func(body string) {
		if err := os.WriteFile(bin+".new", []byte("\x7fELF"+body), 0o755); err != nil { // only the magic matters here
			t.Fatal(err)
		}
		if err := os.Rename(bin+".new", bin); err != nil { // as package managers replace binaries
			t.Fatal(err)
		}
	}
	s := &sealedBinary{path: bin, links: t.TempDir()}
	run := func() string {
		p := s.execPath()
		if p == bin {
			t.Fatal("no sealed copy")
		}
		if filepath.Base(p) != "tool" {
			t.Fatalf("executed as %s: the process would not be called tool", p)
		}
		if target, err := os.Readlink(p); err != nil || target != fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), s.cur.Fd()) {
			t.Fatalf("%s → %q, %v", p, target, err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err == nil {
			_, err = f.WriteString("tampered")
			f.Close()
		}
		if err == nil {
			t.Fatal("sealed copy is writable")
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
		unix.Close(fd)
		if err != nil || seals != fullSeals {
			t.Fatalf("seals %#x, %v; want %#x", seals, err, fullSeals)
		}
		out, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(string(out), "\x7fELF")
	}
	write("one")
	if got := run(); got != "one" {
		t.Fatalf("got %q", got)
	}
	first, _ := os.Readlink(s.execPath())
	write("two")
	if got := run(); got != "two" {
		t.Fatalf("after the file changed: got %q", got)
	}
	runtime.GC()
	runtime.GC()
	if b, err := os.ReadFile(first); err != nil || string(b) != "\x7fELFone" {
		t.Fatalf("the first copy (%s) was closed: %q, %v", first, b, err)
	}
	runtime.KeepAlive(s) // as the Runtime that holds it
	script := &sealedBinary{path: filepath.Join(t.TempDir(), "script")}
	if err := os.WriteFile(script.path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p := script.execPath(); p != script.path {
		t.Fatalf("a script runs from %s: its interpreter could not reopen it", p)
	}
}
