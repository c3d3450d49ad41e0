package oci

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-dev/sbx/internal/runtime"
)

func TestValidate(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ok := runtime.Spec{ID: "abc123", Rootfs: root, Args: []string{"/init"}, Env: []string{"A=1"}, NetNSPath: "/run/netns/x"}
	for _, tc := range []struct {
		name  string
		edit  func(*runtime.Spec)
		valid bool
	}{
		{"ok", func(*runtime.Spec) {}, true},
		{"no netns", func(s *runtime.Spec) { s.NetNSPath = "" }, true},
		{"upper-case id", func(s *runtime.Spec) { s.ID = "ABC" }, false},
		{"path in id", func(s *runtime.Spec) { s.ID = "a/b" }, false},
		{"long id", func(s *runtime.Spec) { s.ID = string(make([]byte, 65)) }, false},
		{"relative rootfs", func(s *runtime.Spec) { s.Rootfs = "r" }, false},
		{"rootfs is a file", func(s *runtime.Spec) { s.Rootfs = file }, false},
		{"empty argv0", func(s *runtime.Spec) { s.Args = []string{""} }, false},
		{"relative netns", func(s *runtime.Spec) { s.NetNSPath = "netns" }, false},
		{"env without =", func(s *runtime.Spec) { s.Env = []string{"A"} }, false},
		{"relative mount dest", func(s *runtime.Spec) { s.Mounts = []runtime.Mount{{Source: "/a", Destination: "b"}} }, false},
		{"negative pids", func(s *runtime.Spec) { s.Limits.Pids = -1 }, false},
		{"negative cpu", func(s *runtime.Spec) { s.Limits.CPUMillis = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			err := validate(s)
			if (err == nil) != tc.valid || (err != nil && !errors.Is(err, ErrInvalidSpec)) {
				t.Fatalf("validate = %v, valid %v", err, tc.valid)
			}
		})
	}
}
