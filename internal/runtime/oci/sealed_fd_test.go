package oci

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSealedBinaryChildFdShuffle: the sealed copy still runs when the
// child's descriptor shuffle lands on its number. Go's fork (syscall
// forkAndExecInChild) moves its error pipe to one past the highest stdio
// descriptor when the pipe's number is lower, over whatever that number is
// in the child; were the copy executed through the child's own
// /proc/self/fd/N, the exec would meet the pipe: "permission denied" (seen
// at 375–510 crun sandboxes, when descriptor numbers are reused out of
// order). Here the copy is at H and the child's stdout at H-1, with free
// numbers below them for the pipe.
func TestSealedBinaryChildFdShuffle(t *testing.T) {
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true binary")
	}
	bin, _ = filepath.EvalSymlinks(bin)
	s := &sealedBinary{path: bin, links: t.TempDir()}
	if s.execPath() == bin {
		t.Fatal("no sealed copy")
	}
	const h = 900 // free in a test process; well below RLIMIT_NOFILE
	for _, fd := range []int{h - 1, h} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			t.Skipf("descriptor %d in use", fd)
		}
	}
	if err := unix.Dup3(int(s.cur.Fd()), h, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	s.cur.Close()
	s.cur = os.NewFile(h, bin)
	s.exe = s.link(s.cur)
	defer s.cur.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := unix.Dup3(int(null.Fd()), h-1, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	stdout := os.NewFile(h-1, "stdout")
	defer stdout.Close()
	cmd := exec.Command(s.execPath())
	cmd.Stdout = stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("run the sealed copy (descriptor %d) with stdout on %d: %v", h, h-1, err)
	}
}
