package identity

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestAs: fn runs with the user's uid, gid, groups and umask on its own
// thread; the rest of the process keeps root's, and what the user may not
// touch stays untouched.
func TestAs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o777))
	secret := filepath.Join(dir, "secret")
	must(t, os.WriteFile(secret, []byte("root only"), 0o600))
	u := User{Name: "nobody", UID: 65534, GID: 65534, Groups: []uint32{65534, 4242}}
	var uid, gid, ruid, suid int
	var groups []int
	var openErr, createErr error
	var created os.FileInfo
	err := As(u, func() error {
		uid, gid = syscall.Geteuid(), syscall.Getegid()
		var r, e, s int32
		syscall.RawSyscall(syscall.SYS_GETRESUID, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&s)))
		ruid, suid = int(r), int(s)
		groups, _ = syscall.Getgroups()
		_, openErr = os.ReadFile(secret)
		createErr = os.WriteFile(filepath.Join(dir, "new"), nil, 0o666)
		created, _ = os.Stat(filepath.Join(dir, "new"))
		return nil
	})
	must(t, err)
	if uid != 65534 || gid != 65534 || len(groups) != 2 || (groups[0] != 4242 && groups[1] != 4242) {
		t.Fatalf("as user: uid %d gid %d groups %v", uid, gid, groups)
	}
	if ruid != 0 || suid != 0 {
		t.Fatalf("real/saved uid %d/%d, want root's (so the user cannot signal the agent)", ruid, suid)
	}
	if !os.IsPermission(openErr) {
		t.Fatalf("reading a root-only file as the user: %v", openErr)
	}
	must(t, createErr)
	if st := created.Sys().(*syscall.Stat_t); st.Uid != 65534 || created.Mode().Perm() != 0o644 {
		t.Fatalf("created as uid %d mode %v, want 65534 0644 (umask 022)", st.Uid, created.Mode())
	}
	if syscall.Geteuid() != 0 {
		t.Fatal("lost root")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the caller's thread lost root")
	}
}

// TestAsConcurrent: many callers at once each see only their own user, and
// the process stays root throughout.
func TestAsConcurrent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := 20000 + i
			_ = As(User{UID: uint32(want), GID: uint32(want)}, func() error {
				if got := syscall.Geteuid(); got != want {
					t.Errorf("uid %d, want %d", got, want)
				}
				return nil
			})
			if syscall.Geteuid() != 0 {
				t.Error("a goroutine outside As is not root")
			}
		}()
	}
	wg.Wait()
}

// TestAsSelfAndPanic: the agent's own user runs fn directly; a panic in fn
// is an error, not a crash.
func TestAsSelfAndPanic(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	must(t, As(User{Name: "root"}, func() error { return nil }))
	if err := As(User{Name: "x", UID: 1, GID: 1}, func() error { panic("boom") }); err == nil {
		t.Fatal("panic not reported")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAsReusesThreads: a thread goes back to the scheduler with root's ids
// once fn returns (so a fork bomb cannot starve the runtime of threads),
// and every call still starts as the user.
func TestAsReusesThreads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	tids := map[int]bool{}
	for range 50 {
		must(t, As(User{Name: "x", UID: 1234, GID: 1234}, func() error {
			if syscall.Geteuid() != 1234 {
				t.Errorf("euid %d in fn", syscall.Geteuid())
			}
			tids[syscall.Gettid()] = true
			return nil
		}))
	}
	if len(tids) == 50 {
		t.Fatalf("50 calls used 50 threads: none was reused")
	}
	var wg sync.WaitGroup
	for range 8 { // whatever thread they land on, other goroutines are root
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if syscall.Geteuid() != 0 {
					t.Error("a thread went back to the scheduler as the user")
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
}

// TestAsOneProc: with GOMAXPROCS 1 (a one-CPU sandbox, or a cgroup limit of
// one CPU) every call ends, also when its goroutine first lands on the main
// thread. It used to leave that thread for a new goroutine, which the one P
// scheduled right back onto the main thread: a file operation as the user
// spun there forever.
func TestAsOneProc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 300 {
			must(t, As(User{Name: "x", UID: 1234, GID: 1234}, func() error { return nil }))
			runtime.Gosched()
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("As did not return within 20 s with GOMAXPROCS 1")
	}
}
