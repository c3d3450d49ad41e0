package audit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// shortFile writes only half of each buffer and fails with ENOSPC while
// full is set, as a write to a full disk does.
type shortFile struct {
	*os.File
	full bool
}

func (f *shortFile) Write(p []byte) (int, error) {
	if f.full {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(p)
}

// A record that hits a full disk is dropped whole: later records chain on
// and the log still verifies and reopens (regression: half a record stayed
// and the daemon refused its own log at the next start).
func TestDiskFullDropsPartialRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sf := &shortFile{File: l.f.(*os.File)}
	l.f = sf
	must(t, l.Append("api", "", "k1", map[string]string{"n": "1"}))
	sf.full = true
	if err := l.Append("api", "", "k1", map[string]string{"n": "2"}); err == nil {
		t.Fatal("append on a full disk succeeded")
	}
	sf.full = false
	must(t, l.Append("api", "", "k1", map[string]string{"n": "3"}))
	must(t, l.Close())
	recs, err := ForSandbox(path, "", 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("after a disk-full episode: %d records, %v", len(recs), err)
	}
	l2, err := Open(path)
	if err != nil {
		t.Fatalf("log refused after a disk-full episode: %v", err)
	}
	must(t, l2.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
