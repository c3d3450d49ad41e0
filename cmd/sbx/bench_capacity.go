package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// capacity is the result of the idle phase: how many sandboxes started
// before the first failure (or the ceiling), and what each one costs idle.
type capacity struct {
	Target       int     `json:"target"`
	Started      int     `json:"started"`
	FirstError   string  `json:"first_error,omitempty"`
	RampSeconds  float64 `json:"ramp_seconds"`
	CgroupMiB    float64 `json:"cgroup_mib_per_sandbox"`         // memUsed from the API, mean
	HostMiB      float64 `json:"host_mib_per_sandbox,omitempty"` // MemAvailable drop / started
	KillSeconds  float64 `json:"kill_seconds"`
	hostMeasured bool
}

// idleWorkers is how many creates the idle phase keeps in flight.
const idleWorkers = 8

// idle starts up to n sandboxes (stopping at the first failure), lets them
// settle, measures memory per idle sandbox, then kills them all.
func idle(ctx context.Context, c *client.Client, f benchFlags, n int) *capacity {
	cp := &capacity{Target: n}
	avail0, hostOK := memAvailable()
	t0 := time.Now()
	ids := startIdle(ctx, c, f, n, cp)
	cp.Started, cp.RampSeconds = len(ids), time.Since(t0).Seconds()
	time.Sleep(2 * time.Second) // let agents and runtimes settle
	if avail1, ok := memAvailable(); ok && hostOK && len(ids) > 0 {
		cp.HostMiB, cp.hostMeasured = float64(avail0-avail1)/float64(len(ids))/(1<<20), true
	}
	cp.CgroupMiB = meanMemUsed(ctx, c, ids)
	t1 := time.Now()
	parallel(ids, idleWorkers, func(id string) { _ = c.Kill(context.WithoutCancel(ctx), id) })
	cp.KillSeconds = time.Since(t1).Seconds()
	return cp
}

// startIdle creates sandboxes with idleWorkers in flight until n exist or
// one fails; it returns the ids of those started.
func startIdle(ctx context.Context, c *client.Client, f benchFlags, n int, cp *capacity) []string {
	var (
		mu      sync.Mutex
		ids     []string
		claimed int
		failed  bool
	)
	next := func() bool { // claims one of the n creates
		mu.Lock()
		defer mu.Unlock()
		if failed || claimed >= n || ctx.Err() != nil {
			return false
		}
		claimed++
		return true
	}
	var wg sync.WaitGroup
	for w := 0; w < idleWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next() {
				sb, err := c.Create(ctx, f.createRequest(time.Hour))
				mu.Lock()
				switch {
				case err != nil && !failed:
					failed, cp.FirstError = true, err.Error()
				case err == nil:
					ids = append(ids, sb.SandboxID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ids
}

// meanMemUsed averages the sandboxes' memUsed (cgroup, excluding cache).
func meanMemUsed(ctx context.Context, c *client.Client, ids []string) float64 {
	var (
		mu       sync.Mutex
		sum, cnt int64
	)
	parallel(ids, idleWorkers, func(id string) {
		ms, err := c.Metrics(ctx, id)
		if err != nil || len(ms) == 0 {
			return
		}
		mu.Lock()
		sum, cnt = sum+ms[len(ms)-1].MemUsed, cnt+1
		mu.Unlock()
	})
	if cnt == 0 {
		return 0
	}
	return float64(sum) / float64(cnt) / (1 << 20)
}

// parallel runs fn for each id with at most workers at once.
func parallel(ids []string, workers int, fn func(string)) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ch {
				fn(id)
			}
		}()
	}
	for _, id := range ids {
		ch <- id
	}
	close(ch)
	wg.Wait()
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes. It is the
// host's view only when bench runs on the daemon's machine.
func memAvailable() (int64, bool) {
	fh, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

func printCapacity(w io.Writer, cp *capacity) {
	fmt.Fprintf(w, "idle sandboxes started: %d of %d in %.1f s (killed in %.1f s)\n", cp.Started, cp.Target, cp.RampSeconds, cp.KillSeconds)
	if cp.FirstError != "" {
		fmt.Fprintf(w, "first create error: %s\n", cp.FirstError)
	}
	fmt.Fprintf(w, "memory per idle sandbox: %.1f MiB (cgroup memUsed)", cp.CgroupMiB)
	if cp.hostMeasured {
		fmt.Fprintf(w, ", %.1f MiB (host MemAvailable drop, includes daemon share)", cp.HostMiB)
	}
	fmt.Fprintln(w)
}
