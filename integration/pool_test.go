package integration

import (
	"strings"
	"testing"
	"time"
)

// TestWarmPool checks that a claimed pooled sandbox is indistinguishable from
// a cold one: fresh identity and token, no state from earlier tenants, and
// that creates beyond the pool fall back to the cold path.
func TestWarmPool(t *testing.T) {
	d := startDaemon(t, "crun", "", "--pool", "base=2")
	d.waitPool(t, 2)
	var seen []*sandbox
	for i := 0; i < 4; i++ { // 2 from the pool, then cold ones
		sb := d.create(map[string]any{"envVars": map[string]string{"TENANT": string(rune('a' + i))}})
		out, code := sb.run("", "echo $TENANT; ls /tmp /home/user; cat /tmp/secret 2>/dev/null || true", 20*time.Second)
		if code != 0 || !strings.HasPrefix(out, string(rune('a'+i))+"\n") || strings.Contains(out, "secret") {
			t.Fatalf("tenant %d sees %q", i, out)
		}
		sb.run("", "echo tenant-data > /tmp/secret", 20*time.Second)
		for _, o := range seen {
			if o.ID == sb.ID || o.Token == sb.Token {
				t.Fatal("identity or token reused across tenants")
			}
		}
		seen = append(seen, sb)
		if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 {
			t.Fatalf("kill: %d", code)
		}
	}
	// The pool refills after being drained.
	d.waitPool(t, 2)
	start := time.Now()
	sb := d.create(nil)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("create after refill took %s", took)
	}
	if out, _ := sb.run("", "cat /tmp/secret 2>/dev/null; echo end", 20*time.Second); out != "end\n" {
		t.Fatalf("state leaked into a refilled sandbox: %q", out)
	}
}
