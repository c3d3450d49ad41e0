package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// benchFlags configure `sbx bench`.
type benchFlags struct {
	cf                clientFlags
	runtime, template string
	n, burst, rtt     int
	stagger           int
	every             time.Duration
	idle              int
	json              bool
	cmd               string
	floorN            int
	floorRootfs       string
	floorOnly         bool
}

// phase collects the latencies and errors of one measured step.
type phase struct {
	Name     string  `json:"name"`
	Runtime  string  `json:"runtime"`
	P50Floor float64 `json:"p50_floor_ratio,omitempty"` // p50 / the floor's p50
	P95Floor float64 `json:"p95_floor_ratio,omitempty"` // p95 / the floor's p50
	N        int     `json:"n"`
	Errors   int     `json:"errors"`
	P50      float64 `json:"p50_ms"`
	P95      float64 `json:"p95_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	Err      string  `json:"first_error,omitempty"`
	mu       sync.Mutex
	d        []time.Duration
}

func (p *phase) add(d time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.N++
	if err != nil {
		if p.Errors == 0 {
			p.Err = err.Error()
		}
		p.Errors++
		return
	}
	p.d = append(p.d, d)
}

func (p *phase) finish() {
	sort.Slice(p.d, func(i, j int) bool { return p.d[i] < p.d[j] })
	q := func(f float64) float64 {
		if len(p.d) == 0 {
			return 0
		}
		return float64(p.d[min(len(p.d)-1, int(f*float64(len(p.d))))].Microseconds()) / 1000
	}
	p.P50, p.P95, p.P99, p.Max = q(0.50), q(0.95), q(0.99), q(1)
}

func runBench(ctx context.Context, args []string) int {
	std := osStdio()
	var f benchFlags
	fs := newFlagSet("bench", "sbx bench [--runtime R] [--n N] [--stagger N --every D] [--burst N] [--idle N] [--json]\n\n"+
		"Drives a running sbx serve through its public API like the public sandbox\nbenchmarks: time to interactive (create → first command output → kill),\nsequential, staggered and in bursts, command round trip, 1 MiB file\nwrite+read, and memory per idle sandbox (--idle N; a large N finds the\nnode ceiling).", std, &f.cf)
	fs.StringVar(&f.runtime, "runtime", "", "runtime for the sandboxes (default: the server's)")
	fs.StringVar(&f.template, "template", "base", "template")
	fs.IntVar(&f.n, "n", 20, "sequential create→run→kill iterations")
	fs.IntVar(&f.stagger, "stagger", 0, "create→run→kill cycles started one every --every, not waiting\nfor each other (0 = skip)")
	fs.DurationVar(&f.every, "every", 50*time.Millisecond, "interval between staggered starts")
	fs.IntVar(&f.burst, "burst", 10, "sandboxes created at once in the burst phase (0 = skip)")
	fs.IntVar(&f.rtt, "rtt", 50, "command round trips in one live sandbox")
	fs.IntVar(&f.idle, "idle", 10, "idle sandboxes to start (until the first failure) to measure memory\nper sandbox and the node's ceiling (0 = skip)")
	fs.StringVar(&f.cmd, "cmd", "true", "first command (e.g. 'node -v')")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	fs.IntVar(&f.floorN, "floor", 15, "`N` runs of the runtime's floor, measured in the same run on this machine\n(a bare 'RUNTIME run' of the template's rootfs, 'bash -l -c true' from a\nrunning shell; needs root and the daemon's machine; 0 = skip)")
	fs.BoolVar(&f.floorOnly, "floor-only", false, "measure only the floor of --runtime (no daemon needed)")
	fs.StringVar(&f.floorRootfs, "floor-rootfs", "", "rootfs of the floor (default /var/lib/sbx/templates/<template>/rootfs; an installed template's rootfs stands for all its layers, as its sandboxes see them)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if f.stagger > 0 && f.every <= 0 {
		fmt.Fprintln(std.err, "sbx bench: --every must be positive")
		return exitUsage
	}
	if f.floorOnly {
		return floorOnly(ctx, std, f)
	}
	c, err := f.cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx bench:", err)
		return exitUsage
	}
	res := benchResult{Template: f.template}
	if res.Runtime, err = sandboxRuntime(ctx, c, f); err != nil {
		fmt.Fprintln(std.err, "sbx bench:", err)
		return 1
	}
	res.Phases = bench(ctx, c, f)
	if f.idle > 0 {
		res.Idle = idle(ctx, c, f, f.idle)
	}
	if f.floorN > 0 {
		res.Floor = measureFloor(ctx, res.Runtime, f.rootfs(), f.floorN)
	}
	res.finish()
	res.report(std.out, f.json)
	return res.exitCode()
}

func bench(ctx context.Context, c *client.Client, f benchFlags) []*phase {
	create, exec, kill, tti := &phase{Name: "create"}, &phase{Name: "first exec"}, &phase{Name: "kill"}, &phase{Name: "TTI"}
	for i := 0; i < f.n && ctx.Err() == nil; i++ {
		ttiOnce(ctx, c, f, create, exec, kill, tti)
	}
	out := []*phase{create, exec, kill, tti}
	if f.stagger > 0 {
		out = append(out, staggered(ctx, c, f)...)
	}
	if f.burst > 0 {
		out = append(out, burst(ctx, c, f))
	}
	return append(out, live(ctx, c, f)...)
}

// burst creates f.burst sandboxes at once and runs the first command in
// each; the sandboxes are killed only after every TTI is in, so kills do not
// compete with the creates being measured.
func burst(ctx context.Context, c *client.Client, f benchFlags) *phase {
	p := &phase{Name: fmt.Sprintf("TTI burst x%d", f.burst)}
	ids := make(chan string, f.burst)
	var wg sync.WaitGroup
	for i := 0; i < f.burst; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			sb, err := c.Create(ctx, f.createRequest(2*time.Minute))
			if err == nil {
				ids <- sb.SandboxID
				_, err = c.Sandbox(sb).Run(ctx, client.RunRequest{Cmd: f.cmd}, io.Discard, io.Discard)
			}
			p.add(time.Since(t0), err)
		}()
	}
	wg.Wait()
	close(ids)
	var all []string
	for id := range ids {
		all = append(all, id)
	}
	parallel(all, idleWorkers, func(id string) { _ = c.Kill(context.WithoutCancel(ctx), id) })
	return p
}

// rootfs is the floor's rootfs: --floor-rootfs or the installed template's.
func (f benchFlags) rootfs() string {
	if f.floorRootfs != "" {
		return f.floorRootfs
	}
	return filepath.Join("/var/lib/sbx/templates", f.template, "rootfs")
}

// floorOnly serves --floor-only: the floor of --runtime, measured here.
func floorOnly(ctx context.Context, std stdio, f benchFlags) int {
	if f.runtime == "" || f.floorN <= 0 {
		fmt.Fprintln(std.err, "sbx bench: --floor-only needs --runtime and --floor > 0")
		return exitUsage
	}
	res := benchResult{Runtime: f.runtime, Template: f.template, Floor: measureFloor(ctx, f.runtime, f.rootfs(), f.floorN)}
	res.report(std.out, f.json)
	return res.exitCode()
}

// createRequest is the create every bench phase sends.
func (f benchFlags) createRequest(timeout time.Duration) client.CreateRequest {
	return client.CreateRequest{TemplateID: f.template, Runtime: f.runtime, Timeout: timeout}
}

// ttiOnce measures one create → first command output → kill.
func ttiOnce(ctx context.Context, c *client.Client, f benchFlags, create, exec, kill, tti *phase) {
	t0 := time.Now()
	sb, err := c.Create(ctx, f.createRequest(2*time.Minute))
	create.add(time.Since(t0), err)
	if err != nil {
		tti.add(0, err)
		return
	}
	t1 := time.Now()
	_, err = c.Sandbox(sb).Run(ctx, client.RunRequest{Cmd: f.cmd}, io.Discard, io.Discard)
	exec.add(time.Since(t1), err)
	tti.add(time.Since(t0), err)
	t2 := time.Now()
	err = c.Kill(context.WithoutCancel(ctx), sb.SandboxID)
	kill.add(time.Since(t2), err)
}

// live measures round trips and file I/O in one sandbox: a command given
// as argv (`/bin/true`, no shell) and as the SDK sends commands.run('true')
// (`bash -l -c true`).
func live(ctx context.Context, c *client.Client, f benchFlags) []*phase {
	if f.rtt <= 0 {
		return nil
	}
	rtt, shell, files := &phase{Name: "command round trip"}, &phase{Name: "bash -l -c true round trip"}, &phase{Name: "1 MiB write+read"}
	sb, err := c.Create(ctx, f.createRequest(2*time.Minute))
	if err != nil {
		rtt.add(0, err)
		return []*phase{rtt}
	}
	defer c.Kill(context.WithoutCancel(ctx), sb.SandboxID)
	sc := c.Sandbox(sb)
	data := make([]byte, 1<<20)
	for i := 0; i < f.rtt && ctx.Err() == nil; i++ {
		t := time.Now()
		_, err := sc.Run(ctx, client.RunRequest{Argv: []string{"/bin/true"}}, io.Discard, io.Discard)
		rtt.add(time.Since(t), err)
		t = time.Now()
		_, err = sc.Run(ctx, client.RunRequest{Cmd: "true"}, io.Discard, io.Discard)
		shell.add(time.Since(t), err)
		t = time.Now()
		err = sc.WriteFile(ctx, "/tmp/bench.bin", data, "")
		if err == nil {
			_, err = sc.ReadFile(ctx, "/tmp/bench.bin")
		}
		files.add(time.Since(t), err)
	}
	return []*phase{rtt, shell, files}
}
