package volume

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"data", true}, {"my-vol_2", true}, {"A", true}, {strings.Repeat("a", 64), true},
		// E2B's SDK tests refuse these.
		{"", false}, {"vol name", false}, {"vol.name", false}, {"vol/a", false}, {"{x}", false},
		{strings.Repeat("a", 65), false}, {"..", false}, {"é", false}, {"a\x00", false},
	} {
		if got := ValidName(c.name); got != c.ok {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestCheckMountPaths(t *testing.T) {
	for _, c := range []struct {
		paths []string
		bad   string // substring of the error; "" = valid
	}{
		{[]string{"/mnt/data"}, ""},
		{[]string{"/home/user/a", "/home/user/b"}, ""},
		{[]string{"/data", "/database"}, ""},
		{[]string{"mnt/data"}, "absolute"},
		{[]string{""}, "absolute"},
		{[]string{"/"}, "cannot be mounted at /"},
		{[]string{"/mnt/../etc"}, "not clean"},
		{[]string{"/mnt/data/"}, "not clean"},
		{[]string{"/proc"}, "reserved"},
		{[]string{"/proc/self"}, "reserved"},
		{[]string{"/sys/fs"}, "reserved"},
		{[]string{"/dev/shm"}, "reserved"},
		{[]string{"/.sbx"}, "reserved"},
		{[]string{"/.sbx/sbx-agent"}, "reserved"},
		{[]string{"/mnt/a", "/mnt/a"}, "overlap"},
		{[]string{"/mnt", "/mnt/a"}, "overlap"},
		{[]string{"/mnt/a/b", "/mnt/a"}, "overlap"},
		{[]string{"/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h", "/i"}, "at most 8"},
		{[]string{"/a\x00b"}, "NUL"},
	} {
		err := CheckMountPaths(c.paths)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%q: unexpected error %v", c.paths, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%q: error %v, want ErrInvalid containing %q", c.paths, err, c.bad)
		}
	}
}

func TestMetaCheck(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	for _, c := range []struct {
		m  Meta
		ok bool
	}{
		{Meta{}, true}, {Meta{UID: u(1000), GID: u(0), Mode: u(0o755)}, true}, {Meta{Mode: u(0o1777)}, true},
		{Meta{UID: u(65536)}, false}, {Meta{GID: u(1 << 31)}, false},
		{Meta{Mode: u(0o4755)}, false}, {Meta{Mode: u(0o2755)}, false}, {Meta{Mode: u(0o100644)}, false},
	} {
		if err := c.m.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: Check() = %v, want ok=%v", c.m, err, c.ok)
		}
	}
}

// TestMountPathErrorsBounded: a refused mount path is quoted by at most 64
// characters (before, a 1 MiB path not starting with '/' came back whole
// in the create's 400).
func TestMountPathErrorsBounded(t *testing.T) {
	big := strings.Repeat("z", 1<<20)
	for _, paths := range [][]string{{big}, {"/" + big}, {"/proc/" + big}, {"/a/./" + strings.Repeat("z", 900)}} {
		err := CheckMountPaths(paths)
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), strings.Repeat("z", 65)) {
			t.Errorf("%.20q…: %.200v, want ErrInvalid quoting at most 64 characters", paths[0], err)
		}
	}
}
