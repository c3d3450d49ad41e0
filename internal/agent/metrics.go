package agent

import (
	"bufio"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Metrics is the body of GET /metrics (envd's field names).
type Metrics struct {
	Ts          int64   `json:"ts"`
	CPUCount    int     `json:"cpu_count"`
	CPUUsedPct  float64 `json:"cpu_used_pct"`
	MemTotal    uint64  `json:"mem_total"`
	MemUsed     uint64  `json:"mem_used"`
	MemCache    uint64  `json:"mem_cache"`
	MemTotalMiB uint64  `json:"mem_total_mib"`
	MemUsedMiB  uint64  `json:"mem_used_mib"`
	DiskUsed    uint64  `json:"disk_used"`
	DiskTotal   uint64  `json:"disk_total"`
}

func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.metrics.read())
}

// metricsSource reads the sandbox's figures as seen from inside it: its
// cgroup (v2, else v1) when one is visible, else /proc/meminfo and
// /proc/stat; the disk is statfs of the root. root is "/" except in tests.
//
// CPU use is the average since the previous read (the first read: since
// the source was made), over the CPUs the cgroup may use.
type metricsSource struct {
	root string

	mu   sync.Mutex
	last cpuSample
}

type cpuSample struct {
	at    time.Time
	busy  float64 // CPU-seconds used (cgroup), or busy jiffies (/proc/stat)
	total float64 // /proc/stat only: all jiffies
	cg    bool
}

func newMetricsSource(root string) *metricsSource {
	m := &metricsSource{root: root}
	m.last = m.sampleCPU()
	return m
}

func (m *metricsSource) path(p string) string { return filepath.Join(m.root, p) }

func (m *metricsSource) read() Metrics {
	out := Metrics{Ts: time.Now().Unix(), CPUCount: m.cpuCount()}
	out.MemTotal, out.MemUsed, out.MemCache = m.memory()
	out.MemTotalMiB, out.MemUsedMiB = out.MemTotal>>20, out.MemUsed>>20
	var fs unix.Statfs_t
	if unix.Statfs(m.root, &fs) == nil {
		out.DiskTotal = fs.Blocks * uint64(fs.Bsize)
		out.DiskUsed = (fs.Blocks - fs.Bfree) * uint64(fs.Bsize)
	}
	cur := m.sampleCPU()
	m.mu.Lock()
	prev := m.last
	m.last = cur
	m.mu.Unlock()
	out.CPUUsedPct = cpuPct(prev, cur, out.CPUCount)
	return out
}

func cpuPct(prev, cur cpuSample, cpus int) float64 {
	var pct float64
	switch {
	case prev.cg != cur.cg:
	case cur.cg:
		if wall := cur.at.Sub(prev.at).Seconds(); wall > 0 && cpus > 0 {
			pct = (cur.busy - prev.busy) / (wall * float64(cpus)) * 100
		}
	case cur.total > prev.total:
		pct = (cur.busy - prev.busy) / (cur.total - prev.total) * 100
	}
	return math.Round(min(max(pct, 0), 100)*100) / 100
}

// cpuCount is the cgroup's CPU quota rounded up, else the usable CPUs.
func (m *metricsSource) cpuCount() int {
	n := runtime.NumCPU()
	quota, period := -1.0, 0.0
	if f := strings.Fields(m.readString("sys/fs/cgroup/cpu.max")); len(f) == 2 && f[0] != "max" {
		quota, _ = strconv.ParseFloat(f[0], 64)
		period, _ = strconv.ParseFloat(f[1], 64)
	} else if q, ok := m.readUint("sys/fs/cgroup/cpu/cpu.cfs_quota_us"); ok {
		// cpu.cfs_quota_us is -1 without a quota: readUint fails on it.
		quota = float64(q)
		p, _ := m.readUint("sys/fs/cgroup/cpu/cpu.cfs_period_us")
		period = float64(p)
	}
	if quota > 0 && period > 0 {
		n = min(n, max(1, int(math.Ceil(quota/period))))
	}
	return n
}

func (m *metricsSource) sampleCPU() cpuSample {
	now := time.Now()
	if kv := m.readKV("sys/fs/cgroup/cpu.stat"); kv != nil {
		if us, ok := kv["usage_usec"]; ok {
			return cpuSample{at: now, busy: float64(us) / 1e6, cg: true}
		}
	}
	if ns, ok := m.readUint("sys/fs/cgroup/cpuacct/cpuacct.usage"); ok {
		return cpuSample{at: now, busy: float64(ns) / 1e9, cg: true}
	}
	// /proc/stat: cpu user nice system idle iowait irq softirq steal ...
	line, _, _ := strings.Cut(m.readString("proc/stat"), "\n")
	f := strings.Fields(line)
	s := cpuSample{at: now}
	if len(f) < 5 || f[0] != "cpu" {
		return s
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest time is already counted in user
			break
		}
		s.total += n
		if i != 3 && i != 4 { // idle, iowait
			s.busy += n
		}
	}
	return s
}

// memory returns total, used and cache bytes: the cgroup's limit (when
// below the machine's memory) and usage less inactive file pages, else
// MemTotal and MemTotal-MemAvailable.
func (m *metricsSource) memory() (total, used, cache uint64) {
	info := m.readKV("proc/meminfo") // values in kB
	total = info["MemTotal"] * 1024
	used = total - min(total, info["MemAvailable"]*1024)
	cache = info["Cached"] * 1024
	limit, current, stat := uint64(0), uint64(0), map[string]uint64(nil)
	if cur, ok := m.readUint("sys/fs/cgroup/memory.current"); ok {
		current, stat = cur, m.readKV("sys/fs/cgroup/memory.stat")
		limit, _ = m.readUint("sys/fs/cgroup/memory.max") // "max" fails: no limit
		cache = stat["file"]
	} else if cur, ok := m.readUint("sys/fs/cgroup/memory/memory.usage_in_bytes"); ok {
		current, stat = cur, m.readKV("sys/fs/cgroup/memory/memory.stat")
		limit, _ = m.readUint("sys/fs/cgroup/memory/memory.limit_in_bytes")
		cache = stat["total_cache"]
		if _, ok := stat["total_inactive_file"]; ok {
			stat["inactive_file"] = stat["total_inactive_file"]
		}
	} else {
		return total, used, cache
	}
	if limit > 0 && (total == 0 || limit < total) {
		total = limit
	}
	used = min(current-min(current, stat["inactive_file"]), total)
	return total, used, cache
}

func (m *metricsSource) readString(p string) string {
	b, err := os.ReadFile(m.path(p))
	if err != nil {
		return ""
	}
	return string(b)
}

func (m *metricsSource) readUint(p string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(m.readString(p)), 10, 64)
	return n, err == nil
}

// readKV parses "key value" or "key: value kB" lines; nil if unreadable.
func (m *metricsSource) readKV(p string) map[string]uint64 {
	f, err := os.Open(m.path(p))
	if err != nil {
		return nil
	}
	defer f.Close()
	kv := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if n, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			kv[strings.TrimSuffix(fields[0], ":")] = n
		}
	}
	return kv
}
