package egress

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable time source.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestResolutionsHas(t *testing.T) {
	r := &Resolutions{}
	r.Add("sb1", "Example.COM.", addrs("93.184.216.34", "2606:2800:220:1::1"), time.Minute)
	for _, tc := range []struct {
		sandbox, name, ip string
		want              bool
	}{
		{"sb1", "example.com", "93.184.216.34", true},
		{"sb1", "EXAMPLE.com.", "93.184.216.34", true},
		{"sb1", "example.com", "::ffff:93.184.216.34", true},
		{"sb1", "example.com", "2606:2800:220:1::1", true},
		{"sb1", "example.com", "93.184.216.35", false},
		{"sb1", "www.example.com", "93.184.216.34", false},
		{"sb2", "example.com", "93.184.216.34", false},
		{"", "example.com", "93.184.216.34", false},
	} {
		if got := r.Has(tc.sandbox, tc.name, netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("Has(%q, %q, %s) = %v, want %v", tc.sandbox, tc.name, tc.ip, got, tc.want)
		}
	}
}

func TestResolutionsExpiry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttl      time.Duration
		alive    time.Duration // still there after this
		dead     time.Duration // gone after this
		min, max time.Duration
	}{
		{"ttl kept", 5 * time.Minute, 5 * time.Minute, 5*time.Minute + time.Second, 0, 0},
		{"zero ttl raised to the default floor", 0, DefaultMinTTL, DefaultMinTTL + time.Second, 0, 0},
		{"short ttl raised", time.Second, 30 * time.Second, 31 * time.Second, 30 * time.Second, 0},
		{"long ttl capped", 48 * time.Hour, time.Hour, time.Hour + time.Second, 0, 0},
		{"custom cap", time.Hour, 2 * time.Minute, 2*time.Minute + time.Second, 0, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1e9, 0)}
			r := &Resolutions{now: clk.now, MinTTL: tc.min, MaxTTL: tc.max}
			ip := netip.MustParseAddr("1.1.1.1")
			r.Add("sb", "one.one", []netip.Addr{ip}, tc.ttl)
			clk.advance(tc.alive)
			if !r.Has("sb", "one.one", ip) {
				t.Fatalf("gone after %v", tc.alive)
			}
			clk.advance(tc.dead - tc.alive)
			if r.Has("sb", "one.one", ip) {
				t.Fatalf("still there after %v", tc.dead)
			}
			if n := r.Len("sb"); n != 0 {
				t.Fatalf("expired entry kept: %d", n)
			}
		})
	}
}

func TestResolutionsRefreshAndPrune(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	r := &Resolutions{now: clk.now}
	a, b := addrs("1.1.1.1")[0], addrs("2.2.2.2")[0]
	r.Add("sb", "a.com", []netip.Addr{a}, time.Minute)
	clk.advance(50 * time.Second)
	r.Add("sb", "a.com", []netip.Addr{a}, time.Minute) // refreshed
	clk.advance(50 * time.Second)
	if !r.Has("sb", "a.com", a) {
		t.Fatal("refresh did not extend the expiry")
	}
	clk.advance(time.Hour)
	r.Add("sb", "b.com", []netip.Addr{b}, time.Minute) // prunes a.com
	if n := r.Len("sb"); n != 1 {
		t.Fatalf("Len = %d after pruning, want 1", n)
	}
}

func TestResolutionsEvictsOldest(t *testing.T) {
	r := &Resolutions{MaxPerSandbox: 3}
	for i := range 5 {
		r.Add("sb", fmt.Sprintf("n%d.com", i), addrs(fmt.Sprintf("1.1.1.%d", i)), time.Minute)
		if i == 2 {
			r.Add("sb", "n0.com", addrs("1.1.1.0"), time.Minute) // n0 becomes the newest
		}
	}
	r.Add("other", "n1.com", addrs("1.1.1.1"), time.Minute)
	want := map[int]bool{0: true, 1: false, 2: false, 3: true, 4: true}
	for i, ok := range want {
		if got := r.Has("sb", fmt.Sprintf("n%d.com", i), netip.MustParseAddr(fmt.Sprintf("1.1.1.%d", i))); got != ok {
			t.Errorf("n%d: Has = %v, want %v", i, got, ok)
		}
	}
	if r.Len("sb") != 3 || r.Len("other") != 1 {
		t.Fatalf("Len = %d/%d, want 3/1", r.Len("sb"), r.Len("other"))
	}
}

func TestResolutionsForget(t *testing.T) {
	r := &Resolutions{}
	ip := netip.MustParseAddr("1.1.1.1")
	r.Add("a", "x.com", []netip.Addr{ip}, time.Minute)
	r.Add("b", "x.com", []netip.Addr{ip}, time.Minute)
	r.Forget("a")
	r.Forget("never-seen")
	if r.Has("a", "x.com", ip) || !r.Has("b", "x.com", ip) {
		t.Fatal("Forget dropped the wrong sandbox")
	}
}

// Add is the DNS filter's Resolved and Has the guard's; both are safe under
// concurrent use (run with -race).
func TestResolutionsConcurrent(t *testing.T) {
	r := &Resolutions{MaxPerSandbox: 50}
	var add func(sandbox, name string, addrs []netip.Addr, ttl time.Duration) = r.Add // dnsfilter.Resolved
	var has func(sandbox, name string, ip netip.Addr) bool = r.Has                    // guard.Guard.Resolved
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb := fmt.Sprintf("sb%d", w%3)
			for i := range 500 {
				ip := netip.AddrFrom4([4]byte{1, 2, byte(i >> 8), byte(i)})
				add(sb, fmt.Sprintf("n%d.com", i%70), []netip.Addr{ip}, time.Minute)
				has(sb, fmt.Sprintf("n%d.com", i%70), ip)
				if i%97 == 0 {
					r.Forget(sb)
				}
			}
		}()
	}
	wg.Wait()
	for i := range 3 {
		if n := r.Len(fmt.Sprintf("sb%d", i)); n > 50 {
			t.Fatalf("sb%d holds %d entries, bound is 50", i, n)
		}
	}
}
