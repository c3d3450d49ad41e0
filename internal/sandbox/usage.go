package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Usage is a sample of a sandbox's resource use, read from its cgroups and
// its writable layer.
type Usage struct {
	CPUPct   float64
	MemUsed  int64
	MemCache int64
	DiskUsed int64
}

// cpuSampleWindow is how long Usage watches CPU time to compute a percentage.
const cpuSampleWindow = 100 * time.Millisecond

// Counters are a sandbox's raw resource figures at one instant: its total
// CPU time so far (-1 if unknown), memory and disk in use.
type Counters struct {
	CPUNanos int64
	MemUsed  int64
	MemCache int64
	DiskUsed int64
}

// Counters reads the sandbox's cgroups (v1 or v2) and layer without waiting;
// a CPU percentage needs two readings (see Usage).
func (m *Manager) Counters(id string) (Counters, error) {
	rsb, err := m.RuntimeSandbox(id)
	if err != nil {
		return Counters{}, err
	}
	paths := rsb.CgroupPaths()
	c := Counters{CPUNanos: cpuNanos(paths)}
	c.MemUsed, c.MemCache = memory(paths)
	if root, ok := m.layers.Rootfs(id); ok {
		var st unix.Statfs_t
		if unix.Statfs(root, &st) == nil {
			c.DiskUsed = int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	return c, nil
}

// Usage samples the sandbox's cgroups (v1 or v2) and layer, watching CPU
// time for cpuSampleWindow.
func (m *Manager) Usage(ctx context.Context, id string) (Usage, error) {
	c0, err := m.Counters(id)
	if err != nil {
		return Usage{}, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return Usage{}, ctx.Err()
	case <-time.After(cpuSampleWindow):
	}
	c1, err := m.Counters(id)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{MemUsed: c1.MemUsed, MemCache: c1.MemCache, DiskUsed: c1.DiskUsed}
	if c1.CPUNanos >= c0.CPUNanos && c0.CPUNanos >= 0 {
		info, _ := m.Get(id)
		u.CPUPct = CPUPercent(c1.CPUNanos-c0.CPUNanos, time.Since(t0), info.CPUCount)
	}
	return u, nil
}

// CPUPercent is cpu time used over wall time d on cores CPUs, in percent of
// all of them.
func CPUPercent(cpu int64, d time.Duration, cores int) float64 {
	if d <= 0 {
		return 0
	}
	return 100 * float64(cpu) / float64(d.Nanoseconds()) / float64(max(cores, 1))
}

// cpuNanos returns the cgroup's total CPU time, or -1 if unknown.
func cpuNanos(paths map[string]string) int64 {
	if p, ok := paths[""]; ok { // cgroup v2
		if v, ok := statField(filepath.Join(p, "cpu.stat"), "usage_usec"); ok {
			return v * 1000
		}
	}
	for _, c := range []string{"cpuacct", "cpu,cpuacct", "cpu"} {
		if p, ok := paths[c]; ok {
			if v, err := readInt(filepath.Join(p, "cpuacct.usage")); err == nil {
				return v
			}
		}
	}
	return -1
}

func memory(paths map[string]string) (used, cache int64) {
	if p, ok := paths[""]; ok {
		used, _ = readInt(filepath.Join(p, "memory.current"))
		cache, _ = statField(filepath.Join(p, "memory.stat"), "file")
		return used, cache
	}
	if p, ok := paths["memory"]; ok {
		used, _ = readInt(filepath.Join(p, "memory.usage_in_bytes"))
		cache, _ = statField(filepath.Join(p, "memory.stat"), "total_cache")
	}
	return used, cache
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

// statField reads "key value" lines (cpu.stat, memory.stat).
func statField(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
