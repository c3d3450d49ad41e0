package network

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain serialises runs of this package's tests on the host (several
// `go test ./...` may run at once): they use fixed prefixes and subnets.
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		f, err := os.OpenFile("/run/sbx-network-test.lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}
