package main

import "testing"

func TestNprocFor(t *testing.T) {
	for _, tc := range []struct{ mem, pids, want uint64 }{
		{512, 512, 204},    // the default sandbox: the pids limit decides
		{128, 512, 64},     // small memory decides
		{1024, 0, 512},     // no pids limit known
		{0, 0, maxNproc},   // nothing known
		{16, 40, minNproc}, // never under the floor
		{1 << 20, 1 << 20, maxNproc},
	} {
		if got := nprocFor(tc.mem, tc.pids); got != tc.want {
			t.Errorf("nprocFor(%d, %d) = %d, want %d", tc.mem, tc.pids, got, tc.want)
		}
	}
}
