package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchHome records the inotify events in e.home while f runs (and briefly
// after), as a watchDir handler would see them.
func watchHome(t *testing.T, e *env, f func()) []fsnotify.Event {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	must(t, err)
	defer w.Close()
	must(t, w.Add(e.home))
	f()
	var evs []fsnotify.Event
	for {
		select {
		case ev := <-w.Events:
			evs = append(evs, ev)
		case <-time.After(300 * time.Millisecond):
			return evs
		}
	}
}

// TestWriteEventsLikeAPlainWrite: an upload is seen by a watcher as a plain
// write of the target: CREATE then WRITE on it for a new file, WRITE for an
// overwrite, and never another name (no temporary file, no rename).
func TestWriteEventsLikeAPlainWrite(t *testing.T) {
	e := newEnv(t)
	target := filepath.Join(e.home, "w.txt")
	octet := map[string]string{"Content-Type": "application/octet-stream", "X-Metadata-k": "v"}
	for _, tt := range []struct {
		name    string
		want    []fsnotify.Op
		notWant fsnotify.Op
	}{
		{"new file", []fsnotify.Op{fsnotify.Create, fsnotify.Write}, fsnotify.Rename | fsnotify.Remove},
		{"overwrite", []fsnotify.Op{fsnotify.Write}, fsnotify.Create | fsnotify.Rename | fsnotify.Remove},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evs := watchHome(t, e, func() {
				if status, _, resp := do(t, "POST", e.url+"/files?path=w.txt", octet, reader("content "+tt.name)); status != 200 {
					t.Fatalf("upload: %d %s", status, resp)
				}
			})
			var seen fsnotify.Op
			for _, ev := range evs {
				if ev.Name != target {
					t.Fatalf("event on %q (%v): only %s may be seen", ev.Name, ev.Op, target)
				}
				seen |= ev.Op
			}
			for _, op := range tt.want {
				if !seen.Has(op) {
					t.Fatalf("events %v lack %v", evs, op)
				}
			}
			if seen&tt.notWant != 0 {
				t.Fatalf("events %v include one of %v", evs, tt.notWant)
			}
		})
	}
}

// TestWriteInPlaceKeepsInode: an overwrite writes the same file (hard links
// and open readers see the new content, as with envd) and keeps its mode;
// a new file is FileMode, owned by the caller.
func TestWriteInPlaceKeepsInode(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.home, "x.sh")
	must(t, os.WriteFile(p, []byte("old"), 0o700))
	e.ownHome(t)
	must(t, os.Link(p, filepath.Join(e.home, "hard")))
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	if status, _, resp := do(t, "POST", e.url+"/files?path=x.sh", octet, reader("new")); status != 200 {
		t.Fatalf("upload: %d %s", status, resp)
	}
	if b, _ := os.ReadFile(filepath.Join(e.home, "hard")); string(b) != "new" {
		t.Fatalf("hard link reads %q: the file was replaced, not written", b)
	}
	if uid, mode := ownerOf(t, p); uid != 1000 || mode != 0o700 {
		t.Fatalf("overwritten file: uid %d mode %v, want 1000 0700 (mode kept)", uid, mode)
	}
}

// TestWriteFailureRemovesNewFile: a body that breaks off is 400 and leaves
// no new file behind.
func TestWriteFailureRemovesNewFile(t *testing.T) {
	e := newEnv(t)
	ct, body := form(t, "cut.txt", strings.Repeat("x", 1000))
	cut := body.Bytes()[:body.Len()-60] // no closing boundary
	status, _, resp := do(t, "POST", e.url+"/files", map[string]string{"Content-Type": ct}, reader(string(cut)))
	if status != 400 {
		t.Fatalf("cut body: %d %s, want 400", status, resp)
	}
	if _, err := os.Lstat(filepath.Join(e.home, "cut.txt")); !os.IsNotExist(err) {
		t.Fatalf("cut.txt after a failed upload: %v", err)
	}
}

// TestParallelWritesLandWhole: concurrent uploads to one path are serialised:
// the file ends as exactly one of them.
func TestParallelWritesLandWhole(t *testing.T) {
	e := newEnv(t)
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	bodies := map[string]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		b := strings.Repeat(fmt.Sprintf("%02d", i), 128<<10)
		bodies[b] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, _, resp := do(t, "POST", e.url+"/files?path=same", octet, reader(b)); status != 200 {
				t.Errorf("upload: %d %s", status, resp)
			}
		}()
	}
	wg.Wait()
	if got, _ := os.ReadFile(filepath.Join(e.home, "same")); !bodies[string(got)] {
		t.Fatalf("after parallel uploads: %d bytes, not one whole upload", len(got))
	}
	if n := len(pathLocks.m); n != 0 {
		t.Fatalf("%d path locks left", n)
	}
}

// TestWriteRefusedSaysItOnce: a write the user may not make is 403 with the
// open error said once ("open <path>: permission denied"), not twice (the
// SDK's message read "open /etc/x: open /etc/x: permission denied").
func TestWriteRefusedSaysItOnce(t *testing.T) {
	e := newEnv(t)
	ro := filepath.Join(e.dir, "rootonly")
	must(t, os.Mkdir(ro, 0o755))
	dst := filepath.Join(ro, "x")
	status, _, resp := do(t, "POST", e.url+"/files?path="+dst, map[string]string{"Content-Type": "application/octet-stream"}, reader("x"))
	if want := fmt.Sprintf(`"message":"open %s: permission denied"`, dst); status != 403 || !strings.Contains(string(resp), want) {
		t.Fatalf("write into a root-owned dir: %d %s, want 403 with %s", status, resp, want)
	}
}
