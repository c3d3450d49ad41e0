package oci

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestHalveSoft: the soft limit goes to half the hard one, once (a lower
// soft limit is kept), and the hard limit is untouched.
func TestHalveSoft(t *testing.T) {
	var before, after unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &before); err != nil {
		t.Fatal(err)
	}
	if before.Max == unix.RLIM_INFINITY {
		t.Skip("unlimited hard RLIMIT_MSGQUEUE: left as it is")
	}
	for range 2 {
		if err := halveSoft(unix.RLIMIT_MSGQUEUE); err != nil {
			t.Fatal(err)
		}
		if err := unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &after); err != nil {
			t.Fatal(err)
		}
		if after.Max != before.Max || after.Cur != min(before.Cur, before.Max/2) {
			t.Fatalf("RLIMIT_MSGQUEUE %+v after halveSoft, was %+v", after, before)
		}
	}
}
