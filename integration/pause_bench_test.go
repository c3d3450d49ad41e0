package integration

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkPauseResume: pause and resume (to the agent answering) of a
// runsc sandbox whose Python process holds MB of touched memory.
//
//	go test -run '^$' -bench PauseResume -benchtime 5x ./integration/
func BenchmarkPauseResume(b *testing.B) {
	d := startDaemon(b, "runsc", "")
	for _, mb := range []int{10, 100, 500} {
		b.Run(fmt.Sprintf("mem=%dMB", mb), func(b *testing.B) {
			sb := d.create(map[string]any{"memoryMB": 1024, "timeout": 600})
			hold := fmt.Sprintf(`nohup python3 -c 'import time; b = bytearray(%d << 20); b[::4096] = b"\x01" * len(b[::4096]); open("/tmp/held", "w").write("ok"); time.sleep(1e6)' >/dev/null 2>&1 &`, mb)
			sb.run("", hold+" for i in $(seq 200); do [ -f /tmp/held ] && break; sleep 0.1; done", 60*time.Second)
			var pause, resume []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if code := d.api("POST", "/sandboxes/"+sb.ID+"/pause", nil, nil); code != 204 {
					b.Fatalf("pause: %d", code)
				}
				t1 := time.Now()
				if code := d.api("POST", "/v2/sandboxes/"+sb.ID+"/connect", map[string]any{"timeout": 600}, nil); code != 201 {
					b.Fatalf("resume: %d", code)
				}
				pause, resume = append(pause, t1.Sub(t0)), append(resume, time.Since(t1))
			}
			b.ReportMetric(ms(median(pause)), "pause-ms")
			b.ReportMetric(ms(median(resume)), "resume-ms")
			d.deleteQuiet(sb.ID)
		})
	}
}

// BenchmarkFork: fork of a runsc sandbox into N children (all running and
// initialised when the call returns).
//
//	go test -run '^$' -bench Fork -benchtime 3x ./integration/
func BenchmarkFork(b *testing.B) {
	d := startDaemon(b, "runsc", "")
	src := d.create(map[string]any{"timeout": 600})
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var took []time.Duration
			for i := 0; i < b.N; i++ {
				var kids []struct {
					Sandbox *struct{ SandboxID string } `json:"sandbox"`
				}
				t0 := time.Now()
				if code := d.api("POST", "/sandboxes/"+src.ID+"/fork", map[string]any{"count": n, "timeout": 600}, &kids); code != 201 {
					b.Fatalf("fork: %d", code)
				}
				took = append(took, time.Since(t0))
				b.StopTimer()
				for _, k := range kids {
					if k.Sandbox == nil {
						b.Fatalf("a child failed: %s", tail(d.log.String(), 2000))
					}
					d.deleteQuiet(k.Sandbox.SandboxID)
				}
				b.StartTimer()
			}
			b.ReportMetric(ms(median(took)), "fork-ms")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
