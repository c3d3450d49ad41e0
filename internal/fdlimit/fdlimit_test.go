package fdlimit

import (
	"syscall"
	"testing"
)

// TestCounter: each bound refuses past it, a refusal counts nothing, and a
// release (called twice) gives back exactly one.
func TestCounter(t *testing.T) {
	c := NewCounter(Limits{PerSandbox: 2, PerTeam: 3, Total: 4})
	admit := func(sb, team string, want bool) func() {
		t.Helper()
		rel, ok := c.Admit(sb, team)
		if ok != want {
			t.Fatalf("Admit(%s, %s) = %v, want %v (total %d)", sb, team, ok, want, c.Total())
		}
		return rel
	}
	r1 := admit("a1", "A", true)
	admit("a1", "A", true)
	admit("a1", "A", false) // per sandbox
	admit("a2", "A", true)
	admit("a3", "A", false) // per team
	admit("b1", "B", true)
	admit("b2", "B", false) // in all
	r1()
	r1()
	if c.Total() != 3 {
		t.Fatalf("total %d after one release, want 3", c.Total())
	}
	admit("b2", "B", true)
	var zero Counter
	if _, ok := zero.Admit("x", "y"); !ok {
		t.Error("the zero Counter refused")
	}
}

// TestDescriptors follows RLIMIT_NOFILE, capped at 65536.
func TestDescriptors(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skip(err)
	}
	if got, want := Descriptors(), int(min(rl.Cur, maxDescriptors)); got != want {
		t.Errorf("Descriptors() = %d, want %d", got, want)
	}
}
