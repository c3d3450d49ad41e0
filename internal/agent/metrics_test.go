package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

const meminfo = `MemTotal:       8000000 kB
MemFree:        1000000 kB
MemAvailable:   6000000 kB
Cached:         2000000 kB
`

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func TestMetricsSources(t *testing.T) {
	const kB = 1024
	ncpu := runtime.NumCPU()
	tests := []struct {
		name                string
		files               map[string]string
		update              map[string]string // written between the two reads
		cpus                int
		total, used, cache  uint64
		pctMin, pctMax      float64
		cgroupCPUPerSeconds bool
	}{
		{
			name: "cgroup v2 with limits",
			files: map[string]string{
				"proc/meminfo":                 meminfo,
				"sys/fs/cgroup/memory.current": "600000000\n",
				"sys/fs/cgroup/memory.max":     "1073741824\n",
				"sys/fs/cgroup/memory.stat":    "anon 400000000\nfile 200000000\ninactive_file 100000000\n",
				"sys/fs/cgroup/cpu.max":        "100000 100000\n",
				"sys/fs/cgroup/cpu.stat":       "usage_usec 1000000\nuser_usec 1\n",
			},
			cpus: 1, total: 1073741824, used: 500000000, cache: 200000000, pctMin: 0, pctMax: 100,
		},
		{
			name: "cgroup v2 without limits",
			files: map[string]string{
				"proc/meminfo":                 meminfo,
				"sys/fs/cgroup/memory.current": "600000000\n",
				"sys/fs/cgroup/memory.max":     "max\n",
				"sys/fs/cgroup/memory.stat":    "file 200000000\ninactive_file 700000000\n",
				"sys/fs/cgroup/cpu.max":        "max 100000\n",
			},
			cpus: ncpu, total: 8000000 * kB, used: 0, cache: 200000000,
		},
		{
			name: "cgroup v1",
			files: map[string]string{
				"proc/meminfo": meminfo,
				"sys/fs/cgroup/memory/memory.usage_in_bytes": "300000000\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
				"sys/fs/cgroup/memory/memory.stat":           "cache 5\ntotal_cache 100000000\ntotal_inactive_file 50000000\n",
				"sys/fs/cgroup/cpu/cpu.cfs_quota_us":         "-1\n",
				"sys/fs/cgroup/cpuacct/cpuacct.usage":        "5000000000\n",
			},
			cpus: ncpu, total: 8000000 * kB, used: 250000000, cache: 100000000,
		},
		{
			name: "proc only",
			files: map[string]string{
				"proc/meminfo": meminfo,
				"proc/stat":    "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 1 1 1\n",
			},
			update: map[string]string{"proc/stat": "cpu  150 0 150 750 150 0 0 0 0 0\n"},
			cpus:   ncpu, total: 8000000 * kB, used: 2000000 * kB, cache: 2000000 * kB,
			pctMin: 50, pctMax: 50,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			src := newMetricsSource(root)
			for p, c := range tc.update {
				must(t, os.WriteFile(filepath.Join(root, p), []byte(c), 0o644))
			}
			time.Sleep(10 * time.Millisecond)
			m := src.read()
			if m.CPUCount != tc.cpus || m.MemTotal != tc.total || m.MemUsed != tc.used || m.MemCache != tc.cache {
				t.Fatalf("got %+v", m)
			}
			if m.MemTotalMiB != tc.total>>20 || m.MemUsedMiB != tc.used>>20 {
				t.Fatalf("MiB figures: %+v", m)
			}
			if m.CPUUsedPct < tc.pctMin || m.CPUUsedPct > tc.pctMax {
				t.Fatalf("cpu %v%%, want %v..%v", m.CPUUsedPct, tc.pctMin, tc.pctMax)
			}
			if m.DiskTotal == 0 || m.DiskUsed > m.DiskTotal || m.Ts < time.Now().Unix()-5 {
				t.Fatalf("disk/ts: %+v", m)
			}
		})
	}
}

func TestCPUPct(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name      string
		prev, cur cpuSample
		cpus      int
		want      float64
	}{
		{"cgroup: one of two CPUs busy", cpuSample{at: now, busy: 10, cg: true}, cpuSample{at: now.Add(2 * time.Second), busy: 12, cg: true}, 2, 50},
		{"cgroup: clamped", cpuSample{at: now, busy: 0, cg: true}, cpuSample{at: now.Add(time.Second), busy: 5, cg: true}, 1, 100},
		{"proc/stat", cpuSample{busy: 10, total: 100}, cpuSample{busy: 35, total: 200}, 4, 25},
		{"no time passed", cpuSample{busy: 10, total: 100}, cpuSample{busy: 10, total: 100}, 4, 0},
		{"source changed", cpuSample{busy: 10, total: 100}, cpuSample{busy: 1, cg: true}, 4, 0},
	}
	for _, tc := range tests {
		if got := cpuPct(tc.prev, tc.cur, tc.cpus); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
