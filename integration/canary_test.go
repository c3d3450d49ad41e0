package integration

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// canary runs a small exec in a loop in its own sandbox while the attack
// battery runs, recording each round trip's latency and failures.
type canary struct {
	sb   *sandbox
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex // guards lat and fails
	lat   []time.Duration
	fails []string
}

func startCanary(sb *sandbox) *canary {
	c := &canary{sb: sb, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *canary) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		t0 := time.Now()
		out, code, err := c.sb.runErr("", "echo canary", 30*time.Second)
		c.mu.Lock()
		if err != nil || code != 0 || out != "canary\n" {
			c.fails = append(c.fails, time.Now().Format("15:04:05.000")+": "+truncate(out, 80)+" "+errString(err))
		} else {
			c.lat = append(c.lat, time.Since(t0))
		}
		c.mu.Unlock()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// check stops the canary and fails t if any exec failed or the p95 latency
// exceeds bound.
func (c *canary) check(t *testing.T, bound time.Duration) {
	t.Helper()
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fails) > 0 {
		t.Errorf("canary: %d of %d execs failed while the battery ran: %v", len(c.fails), len(c.fails)+len(c.lat), c.fails)
	}
	if len(c.lat) == 0 {
		t.Fatal("canary: no exec completed")
	}
	sort.Slice(c.lat, func(i, j int) bool { return c.lat[i] < c.lat[j] })
	p50, p95, max := c.lat[len(c.lat)/2], c.lat[len(c.lat)*95/100], c.lat[len(c.lat)-1]
	t.Logf("canary: %d execs, p50 %v, p95 %v, max %v", len(c.lat), p50, p95, max)
	if p95 > bound {
		t.Errorf("canary p95 latency %v > %v while the battery ran", p95, bound)
	}
}
