package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"
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
}

// phase collects the latencies and errors of one measured step.
type phase struct {
	Name   string  `json:"name"`
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
	Err    string  `json:"first_error,omitempty"`
	mu     sync.Mutex
	d      []time.Duration
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
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if f.stagger > 0 && f.every <= 0 {
		fmt.Fprintln(std.err, "sbx bench: --every must be positive")
		return exitUsage
	}
	c, err := f.cf.client()
	if err != nil {
		fmt.Fprintln(std.err, "sbx bench:", err)
		return exitUsage
	}
	phases := bench(ctx, c, f)
	for _, p := range phases {
		p.finish()
	}
	var cp *capacity
	if f.idle > 0 {
		cp = idle(ctx, c, f, f.idle)
	}
	report(std.out, f, phases, cp)
	for _, p := range phases {
		if p.Errors > 0 {
			return 1
		}
	}
	if cp != nil && cp.Started < cp.Target {
		return 1
	}
	return 0
}

func report(w io.Writer, f benchFlags, phases []*phase, cp *capacity) {
	if f.json {
		_ = json.NewEncoder(w).Encode(map[string]any{"runtime": f.runtime, "template": f.template, "phases": phases, "idle": cp})
		return
	}
	printPhases(w, phases)
	if cp != nil {
		printCapacity(w, cp)
	}
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

// live measures round trips and file I/O in one sandbox.
func live(ctx context.Context, c *client.Client, f benchFlags) []*phase {
	rtt, files := &phase{Name: "command round trip"}, &phase{Name: "1 MiB write+read"}
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
		err = sc.WriteFile(ctx, "/tmp/bench.bin", data, "")
		if err == nil {
			_, err = sc.ReadFile(ctx, "/tmp/bench.bin")
		}
		files.add(time.Since(t), err)
	}
	return []*phase{rtt, files}
}

func printPhases(w io.Writer, phases []*phase) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tn\terrors\tp50 ms\tp95 ms\tp99 ms\tmax ms\t")
	for _, p := range phases {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", p.Name, p.N, p.Errors, p.P50, p.P95, p.P99, p.Max)
	}
	tw.Flush()
	for _, p := range phases {
		if p.Err != "" {
			fmt.Fprintf(w, "first error in %s: %s\n", p.Name, p.Err)
		}
	}
}
