package oci

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRaiseHostAIO: fs.aio-max-nr is raised to the host's memory in AIO
// events, never lowered.
func TestRaiseHostAIO(t *testing.T) {
	old := aioMaxNr
	aioMaxNr = filepath.Join(t.TempDir(), "aio-max-nr")
	t.Cleanup(func() { aioMaxNr = old })
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	floor := uint64(si.Totalram) * uint64(si.Unit) / aioEventBytes
	for _, tc := range []struct{ cur, want uint64 }{{65536, floor}, {floor * 2, floor * 2}} {
		if err := os.WriteFile(aioMaxNr, []byte(strconv.FormatUint(tc.cur, 10)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := raiseHostAIO(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(aioMaxNr)
		if got, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); got != tc.want {
			t.Errorf("from %d: aio-max-nr %d, want %d", tc.cur, got, tc.want)
		}
	}
}
