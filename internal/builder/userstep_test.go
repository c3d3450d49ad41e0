package builder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/internal/store"
)

func TestValidUserName(t *testing.T) {
	for _, ok := range []string{"guest", "user", "a.b_c-d", "svc$", "Root1"} {
		if err := validUserName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "; exit 1", "-x", "a b", "x/y", "$", strings.Repeat("a", 33), "é"} {
		if err := validUserName(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

func TestPasswdHome(t *testing.T) {
	pw := "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\nbad line\n"
	for _, c := range []struct{ user, home string }{{"root", "/root"}, {"user", "/home/user"}, {"1000", "/home/user"}, {"0", "/root"}} {
		if h, ok := passwdHome(pw, c.user); !ok || h != c.home {
			t.Errorf("%s: %q %v, want %q", c.user, h, ok, c.home)
		}
	}
	if _, ok := passwdHome(pw, "guest"); ok {
		t.Error("guest found")
	}
}

// TestUserStepRefusesBadName: a USER step with a name no adduser takes
// fails the build at that step (E2B's stacktrace.test.ts: setUser('; exit
// 1') fails at setUser), before any sandbox starts. Before, USER only set
// the default and the build succeeded.
func TestUserStepRefusesBadName(t *testing.T) {
	s := &Service{}
	st := &state{}
	st.startRun("", "")
	err := s.step(context.Background(), &store.BuildRec{ID: "b"}, &buildLog{}, "step 1", st, Step{Type: "USER", Args: []string{"; exit 1"}}, false)
	if err == nil || !strings.Contains(err.Error(), "failed to create user: invalid user name") {
		t.Fatalf("USER '; exit 1': %v", err)
	}
}

// TestCommandFailedWording: a failed RUN step's message is E2B's, which
// its SDK tests match (runCmd.test.ts).
func TestCommandFailedWording(t *testing.T) {
	inner := fmt.Errorf("run: %w", fmt.Errorf("%w: %w", errors.New("unauthorized"), connect.NewError(connect.CodeUnauthenticated, errors.New("invalid username: 'root123'"))))
	err := commandFailed("whoami", inner)
	if want := "failed to run command 'whoami': command failed: unauthenticated: invalid username: 'root123'"; err.Error() != want || !errors.Is(err, inner) {
		t.Fatalf("%q, want %q", err, want)
	}
	if err := commandFailed("exit 3", errors.New("exit status 3")); err.Error() != "failed to run command 'exit 3': command failed: exit status 3" {
		t.Fatal(err)
	}
}
