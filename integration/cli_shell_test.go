package integration

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ptyOutput collects what sbx writes to its terminal.
type ptyOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (p *ptyOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.Write(b)
}

func (p *ptyOutput) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.String()
}

// waitFor waits until the terminal shows s (after from bytes), or fails.
func (p *ptyOutput) waitFor(t *testing.T, from int, s string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if out := p.String(); len(out) >= from {
			if i := strings.Index(out[from:], s); i >= 0 {
				return from + i + len(s)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("terminal never showed %q; it shows: %q", s, p.String())
	return 0
}

// startShell runs `sbx args...` (shell ID, exec -t ID ...) on a pseudo-terminal of 30x100. It
// returns the terminal's master (the user's side) and, checked after sbx
// exits, whether sbx left the terminal as it found it (cooked, echoing).
func startShell(t *testing.T, d *daemon, args ...string) (*os.File, *exec.Cmd, *ptyOutput, func()) {
	t.Helper()
	sbxBin, _ := requirements(t)
	cmd := exec.Command(sbxBin, args...)
	cmd.Env = append(os.Environ(), "SBX_URL="+d.url, "SBX_API_KEY="+apiKey)
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	must(t, pty.Setsize(master, &pty.Winsize{Rows: 30, Cols: 100}))
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	must(t, err)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	must(t, cmd.Start())
	t.Cleanup(func() { master.Close(); slave.Close(); _ = cmd.Process.Kill() })
	out := &ptyOutput{}
	go func() { _, _ = io.Copy(out, master) }()
	restored := func() {
		t.Helper()
		after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		must(t, err)
		if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
			t.Errorf("terminal not restored: lflag %#x → %#x", before.Lflag, after.Lflag)
		}
	}
	return master, cmd, out, restored
}

// waitExit waits for cmd and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("sbx shell did not exit")
	}
	return cmd.ProcessState.ExitCode()
}

// TestCLIShell drives `sbx shell` through a pseudo-terminal like a user at
// a terminal: the remote side is a TTY of the local size, a local resize
// reaches it (SIGWINCH), the exit code is the shell's, and Ctrl-P Ctrl-Q
// detaches leaving the shell running.
func TestCLIShell(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(nil)
	tty, cmd, out, restored := startShell(t, d, "shell", sb.ID)
	at := 0
	write := func(s string) {
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("tty -s && echo TTY-$((1+1)); stty size | sed 's/ /x/'\r")
	at = out.waitFor(t, at, "TTY-2")
	at = out.waitFor(t, at, "30x100")
	must(t, pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 120}))
	time.Sleep(300 * time.Millisecond) // SIGWINCH → Update
	write("stty size | sed 's/ /x/'\r")
	at = out.waitFor(t, at, "40x120")
	write("echo $((6*7))-done; exit 3\r")
	out.waitFor(t, at, "42-done")
	if code := waitExit(t, cmd); code != 3 {
		t.Fatalf("exit %d, want the shell's 3; terminal:\n%s", code, out.String())
	}
	restored()

	// Detach: the shell keeps running.
	tty, cmd, out, restored = startShell(t, d, "shell", sb.ID)
	write = func(s string) {
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("echo $$ > /tmp/shell.pid; echo PID-$((1+1))SAVED\r")
	out.waitFor(t, 0, "PID-2SAVED")
	write("\x10\x11")
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("detach: exit %d; terminal: %q", code, out.String())
	}
	out.waitFor(t, 0, "detached")
	restored()
	if o, code := sb.run("user", "kill -0 $(cat /tmp/shell.pid) && echo alive", 10*time.Second); code != 0 || !strings.Contains(o, "alive") {
		t.Fatalf("shell gone after detach: %d %q", code, o)
	}
}

// TestCLIExecTTY: `sbx exec -t` (docker's -it) runs the command on a
// terminal and exits with its code.
func TestCLIExecTTY(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	sb := d.create(nil)
	_, cmd, out, restored := startShell(t, d, "exec", "-t", sb.ID, "--", "sh", "-c", "tty -s && echo T-$((2+2)); stty size; exit 5")
	if code := waitExit(t, cmd); code != 5 {
		t.Fatalf("exit %d, want 5; terminal: %q", code, out.String())
	}
	out.waitFor(t, 0, "T-4")
	out.waitFor(t, 0, "30 100")
	restored()
}
