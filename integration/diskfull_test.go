package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDataDirFull runs the daemon on a 32 MiB tmpfs data dir and fills it:
// creates fail cleanly (507, nothing half-made), a running sandbox keeps
// working, and once space returns creates work again, a restart re-adopts
// the sandbox (database intact) and the audit chain verifies.
func TestDataDirFull(t *testing.T) {
	sbxBin, _ := requirements(t, "crun")
	dir := t.TempDir()
	for p := dir; strings.HasPrefix(p, os.TempDir()+"/"); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o711)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=32m,mode=0711"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	d := startDaemon(t, "crun", dir)
	base := d.inventory()
	keep := d.create(nil)
	filler := filepath.Join(dir, "filler")
	_ = exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=64").Run()
	for i := 0; i < 3; i++ {
		var e map[string]any
		code := d.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base"}, &e)
		if code != 507 || e["code"] != float64(507) {
			t.Fatalf("create on a full data dir = %d %v, want 507", code, e)
		}
	}
	if out, _ := keep.run("", "echo alive", 20*time.Second); out != "alive\n" {
		t.Fatalf("running sandbox broken by the full disk: %q", out)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	sb := d.create(nil)
	if out, _ := sb.run("", "echo ok", 20*time.Second); out != "ok\n" {
		t.Fatalf("create after space returned: %q", out)
	}
	d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil)
	d.stop(syscall.SIGTERM)
	d2 := startDaemon(t, "crun", dir)
	keep.d = d2
	if out, _ := keep.run("", "echo readopted", 20*time.Second); out != "readopted\n" {
		t.Fatalf("sandbox not re-adopted after the disk-full episode: %q", out)
	}
	if out, err := exec.Command(sbxBin, "audit", "verify", "--data-dir", dir, "--anchor-dir", anchorDir(dir)).CombinedOutput(); err != nil {
		t.Fatalf("audit chain broken by the disk-full episode: %v\n%s", err, out)
	}
	d2.api("DELETE", "/sandboxes/"+keep.ID, nil, nil)
	d2.backToBaseline(t, base, keep.ID, sb.ID)
}
