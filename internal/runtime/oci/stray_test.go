package oci

import "testing"

// TestNamesUnder: a cgroup counts as the daemon's only when a process names
// a path under the daemon's dir with the sandbox id as a whole component.
func TestNamesUnder(t *testing.T) {
	const dir, id = "/data/run", "abc123"
	for text, want := range map[string]bool{
		"runsc-gofer\x00--root=/data/run/runtime/runsc\x00--bundle\x00/data/run/runtime/bundles-runsc/abc123\x00":          true,
		"61 0:41 / / rw - overlay overlay rw,lowerdir=/t/a:/t/b,upperdir=/data/run/sandboxes/abc123/layer/upper,workdir=x": true,
		"--bundle=/data/run/runtime/bundles-runsc/abc1234\x00":                                                             false, // another id
		"--bundle=/data/run2/runtime/bundles-runsc/abc123\x00":                                                             false, // another daemon's dir
		"--bundle=/other/data/run/bundles-runsc/abc123\x00":                                                                false, // dir only at a path's start
		"/data/run/runtime/x /abc123":                                                                                      false, // the id is past the path's end
		"upperdir=/data/run/sandboxes/xyz/layer,lowerdir=/abc123":                                                          false,
		"":                                    false,
		"x=/data/run/a\x00/data/run/b/abc123": true,
	} {
		if got := namesUnder(text, dir, id); got != want {
			t.Errorf("namesUnder(%q) = %v, want %v", text, got, want)
		}
	}
}
