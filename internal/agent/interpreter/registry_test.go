package interpreter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// TestListInOrderMade: GET /contexts lists contexts in the order they were
// made, as E2B's server does, so the one made last is last (E2B's
// contexts.test.ts reads the new context as the list's last). Before, they
// were sorted by id: the new one's place was random.
func TestListInOrderMade(t *testing.T) {
	s, _ := newTestServer(t)
	var want []string
	for range 20 {
		k, err := s.newContext("python", "")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, k.ID)
	}
	if err := s.remove(want[3]); err != nil {
		t.Fatal(err)
	}
	want = append(want[:3], want[4:]...)
	got := s.list()
	if len(got) != len(want) {
		t.Fatalf("listed %d contexts, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i] {
			t.Fatalf("context %d is %s, want %s (order made)", i, got[i].ID, want[i])
		}
	}
}

// TestDefaultContextsListed: a server that prewarms (a code-interpreter
// template) lists a python and a javascript context from its start, in that
// order, as E2B's server does (its contexts.test.ts 'list contexts' expects
// both languages); javascript's driver is not started until used. Before,
// only python was listed until javascript code ran.
func TestDefaultContextsListed(t *testing.T) {
	s, err := New(Config{Python: "/nonexistent/python3", User: "user", Node: "/nonexistent/node", Prewarm: true,
		Users: identity.Files{Passwd: "/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.list()
	if len(got) != 2 || got[0].Language != Python || got[1].Language != JavaScript {
		t.Fatalf("contexts at start: %+v, want python then javascript", got)
	}
	js, err := s.defaultContext("js")
	if err != nil || js.ID != got[1].ID {
		t.Fatalf("javascript's default context %v %v, want the listed %s", js, err, got[1].ID)
	}
	js.mu.Lock()
	started := js.d != nil
	js.mu.Unlock()
	if started {
		t.Error("javascript's driver started before any use")
	}
}

// TestCwdNotSearchable: a context's cwd that the code's user cannot enter
// (a directory under root's 0700 one, as /root is) is a 400 naming why,
// not a kernel that fails to start (503). Needs root: the agent switches
// to the user only then.
func TestCwdNotSearchable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the agent runs code as the user only as root")
	}
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(passwd, []byte("user:x:4242:4242::/home/user:/bin/sh\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "group"), nil, 0o644))
	private := filepath.Join(dir, "root")
	must(os.Mkdir(private, 0o700))
	inside := filepath.Join(private, "open")
	must(os.Mkdir(inside, 0o755))
	must(os.Chmod(dir, 0o755))
	must(os.Chmod(filepath.Dir(dir), 0o755)) // t.TempDir makes both 0700
	s, err := New(Config{Python: "/nonexistent/python3", User: "user", Users: identity.Files{Passwd: passwd, Group: filepath.Join(dir, "group")}})
	must(err)
	defer s.Close()
	for _, cwd := range []string{private, inside} {
		if _, err := s.resolveCwd(cwd); !errors.Is(err, errBadRequest) || !strings.Contains(err.Error(), "not accessible to user") {
			t.Errorf("cwd %s: %v, want a 400 saying user cannot enter it", cwd, err)
		}
	}
	must(os.Chmod(private, 0o711))
	if got, err := s.resolveCwd(inside); err != nil || got != inside {
		t.Errorf("cwd %s once its parent is searchable: %q, %v", inside, got, err)
	}
	if _, err := s.resolveCwd("/tmp"); err != nil {
		t.Errorf("cwd /tmp: %v", err)
	}
}
