// Command createcpu makes N creates at once (create → first command, as
// `sbx bench --burst` does) against a running sbx serve and prints, besides
// p50 / p95, what the burst cost in CPU per create, split by who paid:
//   - host cg: the cpuacct cgroup --cg the daemon was moved into (the daemon
//     and the runtime commands it starts, until the sandbox's processes join
//     their own cgroup);
//   - daemon self / waited kids: the daemon's own CPU and its waited
//     children's (/proc/<pid>/stat, clock ticks);
//   - sandbox cg: the sum over the burst's sandbox cgroups (v1 cpuacct under
//     /sys/fs/cgroup/cpuacct/sbx), read before any kill;
//   - system busy: the whole machine's (includes other load).
//
// CPU is far less distorted by a loaded machine than wall time: compare
// builds by it, alternating. The sandboxes are killed after the figures
// (--hold waits first; --stop SIGINTs a pid, e.g. perf record, once the
// creates are in), and a second line gives what the kills cost the host
// (a second after the last, for what they leave to background work). -c
// bounds the creates in flight (1: sequential).
// Beside burstcpu.py (the sandboxes' CPU over a burst and after it, through
// `sbx bench`), it splits the host side: what the daemon and the runtime
// commands cost per create.
//
//	go run ./test/e2e/bench/createcpu --url URL --n 100 --cg /sys/fs/cgroup/cpuacct/X --pid <daemon pid>
//
// The API key is SBX_API_KEY.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/client"
)

func readInt(p string) int64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return -1
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

func procTicks(pid int) (self, kids int64) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	g := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	return g(11) + g(12), g(13) + g(14)
}

func sysBusy() int64 {
	b, _ := os.ReadFile("/proc/stat")
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
	var s int64
	for i, x := range f {
		if i == 3 || i == 4 {
			continue
		}
		v, _ := strconv.ParseInt(x, 10, 64)
		s += v
	}
	return s
}

func main() {
	url := flag.String("url", "http://127.0.0.1:3000", "sbx daemon URL")
	n := flag.Int("n", 100, "creates")
	rt := flag.String("runtime", "crun", "runtime of the sandboxes")
	cg := flag.String("cg", "", "host cpuacct cgroup dir")
	pid := flag.Int("pid", 0, "daemon pid")
	cmd := flag.String("cmd", "true", "first command")
	conc := flag.Int("c", 0, "concurrency (0 = all at once)")
	stopPid := flag.Int("stop", 0, "SIGINT this pid (perf) once the creates are measured")
	hold := flag.Duration("hold", 0, "wait this long before the kills")
	flag.Parse()
	c := client.New(*url, os.Getenv("SBX_API_KEY"))
	ctx := context.Background()
	h0 := readInt(filepath.Join(*cg, "cpuacct.usage"))
	s0, k0 := procTicks(*pid)
	b0 := sysBusy()
	var mu sync.Mutex
	var lat []float64
	var ids []string
	errs := 0
	var wg sync.WaitGroup
	t00 := time.Now()
	if *conc == 0 {
		*conc = *n
	}
	gate := make(chan struct{}, *conc)
	for i := 0; i < *n; i++ {
		wg.Add(1)
		gate <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-gate }()
			t0 := time.Now()
			sb, err := c.Create(ctx, client.CreateRequest{TemplateID: "base", Runtime: *rt, Timeout: 2 * time.Minute})
			if err == nil {
				mu.Lock()
				ids = append(ids, sb.SandboxID)
				mu.Unlock()
				_, err = c.Sandbox(sb).Run(ctx, client.RunRequest{Cmd: *cmd}, io.Discard, io.Discard)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				fmt.Fprintln(os.Stderr, "error:", err)
				return
			}
			lat = append(lat, time.Since(t0).Seconds()*1000)
		}()
	}
	wg.Wait()
	wall := time.Since(t00)
	h1 := readInt(filepath.Join(*cg, "cpuacct.usage"))
	s1, k1 := procTicks(*pid)
	b1 := sysBusy()
	var sbxCPU int64
	for _, id := range ids {
		sbxCPU += readInt(filepath.Join("/sys/fs/cgroup/cpuacct/sbx", id, "cpuacct.usage"))
	}
	sort.Float64s(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	nn := float64(*n)
	fmt.Printf("burst %d %s: p50 %.0f p95 %.0f max %.0f ms, errors %d, wall %.2fs | per create: host cg %.1f ms, daemon self %.1f ms, waited kids %.1f ms, sandbox cg %.1f ms, system busy %.1f ms\n",
		*n, *rt, q(0.5), q(0.95), q(1), errs, wall.Seconds(),
		float64(h1-h0)/1e6/nn, float64(s1-s0)*10/nn, float64(k1-k0)*10/nn, float64(sbxCPU)/1e6/nn, float64(b1-b0)*10/nn)
	if *stopPid > 0 {
		_ = syscall.Kill(*stopPid, syscall.SIGINT)
	}
	time.Sleep(*hold)
	var kw sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, id := range ids {
		kw.Add(1)
		sem <- struct{}{}
		go func() { defer kw.Done(); _ = c.Kill(context.Background(), id); <-sem }()
	}
	kw.Wait()
	// The kills' own cost: a create's host resources are released there.
	time.Sleep(time.Second)
	h2 := readInt(filepath.Join(*cg, "cpuacct.usage"))
	s2, _ := procTicks(*pid)
	fmt.Printf("kills: per sandbox host cg %.1f ms, daemon self %.1f ms | create+kill: daemon self %.1f ms\n",
		float64(h2-h1)/1e6/nn, float64(s2-s1)*10/nn, float64(s2-s0)*10/nn)
}
