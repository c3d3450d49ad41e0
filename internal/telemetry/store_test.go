package telemetry

import (
	"os"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestRingKeepsNewest(t *testing.T) {
	r := newRing[int](3)
	for i := 1; i <= 5; i++ {
		r.push(i)
	}
	if r.len() != 3 || r.at(0) != 3 || r.at(2) != 5 {
		t.Fatalf("ring = len %d [%d..%d], want 3 [3..5]", r.len(), r.at(0), r.at(2))
	}
	if v, ok := r.last(); !ok || v != 5 {
		t.Fatalf("last = %d %v", v, ok)
	}
}

// TestRingGrows: a ring holds nothing up front and grows with what it
// holds, never past its capacity, keeping order across the growth and the
// wrap.
func TestRingGrows(t *testing.T) {
	for _, capacity := range []int{1, 7, 8, 9, 100} {
		r := newRing[int](capacity)
		if cap(r.buf) != 0 {
			t.Fatalf("capacity %d: %d elements allocated before any push", capacity, cap(r.buf))
		}
		for i := 1; i <= 3*capacity+2; i++ {
			r.push(i)
			if cap(r.buf) > capacity {
				t.Fatalf("capacity %d: buffer grew to %d", capacity, cap(r.buf))
			}
			want := min(i, capacity)
			if r.len() != want || r.at(0) != i-want+1 || r.at(want-1) != i {
				t.Fatalf("capacity %d after %d pushes: len %d [%d..%d], want %d [%d..%d]",
					capacity, i, r.len(), r.at(0), r.at(r.len()-1), want, i-want+1, i)
			}
		}
	}
}

func TestSamplesWindow(t *testing.T) {
	s := New(Limits{Samples: 4, Logs: 4, TeamKeep: 4, Retain: time.Hour, MaxEnded: 4})
	for i := range 6 { // the first two fall out of the ring
		s.Record("a", Sample{Time: t0.Add(time.Duration(i) * Step), MemUsed: int64(i)})
	}
	tests := []struct {
		name string
		w    Window
		want []int64
	}{
		{"all", Window{}, []int64{2, 3, 4, 5}},
		{"closed", Window{t0.Add(3 * Step), t0.Add(4 * Step)}, []int64{3, 4}},
		{"open end", Window{Start: t0.Add(5 * Step)}, []int64{5}},
		{"before it existed", Window{t0.Add(-time.Hour), t0.Add(-30 * time.Minute)}, nil},
		{"after", Window{Start: t0.Add(time.Hour)}, nil},
	}
	for _, tc := range tests {
		got, ok := s.Samples("a", tc.w)
		if !ok {
			t.Fatalf("%s: unknown", tc.name)
		}
		var mem []int64
		for _, g := range got {
			mem = append(mem, g.MemUsed)
		}
		if len(mem) != len(tc.want) || (len(mem) > 0 && (mem[0] != tc.want[0] || mem[len(mem)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("%s: got %v, want %v", tc.name, mem, tc.want)
		}
	}
	if _, ok := s.Samples("b", Window{}); ok {
		t.Error("unknown sandbox reported known")
	}
}

func TestLogQuery(t *testing.T) {
	s := New(DefaultLimits)
	add := func(sec int, lvl Level, msg string) {
		s.Log("a", Entry{Time: t0.Add(time.Duration(sec) * time.Second), Level: lvl, Logger: "x", Message: msg})
	}
	add(2, Info, "two")
	add(1, Debug, "one") // arrives late: still sorted by time
	add(3, Error, "three failed")
	add(4, Warn, "four")
	tests := []struct {
		name string
		q    LogQuery
		want string
	}{
		{"all", LogQuery{}, "one two three failed four"},
		{"level", LogQuery{MinLevel: Warn}, "three failed four"},
		{"cursor forward", LogQuery{Cursor: t0.Add(3 * time.Second)}, "three failed four"},
		{"cursor backward", LogQuery{Cursor: t0.Add(2 * time.Second), Backward: true}, "two one"},
		{"backward limit", LogQuery{Backward: true, Limit: 2}, "four three failed"},
		{"search", LogQuery{Search: "failed"}, "three failed"},
		{"search is case-sensitive", LogQuery{Search: "FAILED"}, ""},
	}
	for _, tc := range tests {
		got, _ := s.Logs("a", tc.q)
		var msgs []string
		for _, e := range got {
			msgs = append(msgs, e.Message)
		}
		if g := strings.Join(msgs, " "); g != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, g, tc.want)
		}
	}
}

func TestEntryBounded(t *testing.T) {
	f := map[string]string{}
	for i := range 20 {
		f[strings.Repeat("k", i+1)] = strings.Repeat("v", 1000)
	}
	e := Entry{Logger: strings.Repeat("l", 500), Message: strings.Repeat("é", 2000) + "\xff", Fields: f}.clean()
	if len(e.Message) > MaxMessage || len(e.Logger) > MaxField || len(e.Fields) != MaxFields {
		t.Fatalf("not bounded: message %d logger %d fields %d", len(e.Message), len(e.Logger), len(e.Fields))
	}
	if !strings.HasSuffix(e.Message, "é") {
		t.Errorf("message cut inside a rune")
	}
	for k, v := range e.Fields {
		if len(k) > MaxField || len(v) > MaxField {
			t.Errorf("field %q not bounded", k)
		}
	}
	if c := clip("ok\xffok", 10); c != "ok\uFFFDok" {
		t.Errorf("invalid UTF-8 kept: %q", c)
	}
	if c := clip("a\x1b[31mb\nc\u0085", 64); c != "a\uFFFD[31mb\uFFFDc\uFFFD" {
		t.Errorf("control characters kept: %q", c)
	}
}

func TestLifecycleAndRetention(t *testing.T) {
	now := t0
	s := New(Limits{Samples: 4, Logs: 8, TeamKeep: 8, Retain: time.Hour, MaxEnded: 1})
	s.now = func() time.Time { return now }
	s.Event("a", "created", map[string]string{"template": "base"})
	s.Event("b", "created", nil)
	s.tickTeams(now, map[string]int{DefaultTeam: 2}, Step)
	s.Event("a", "killed", map[string]string{"reason": "timeout"})
	logs, _ := s.Logs("a", LogQuery{})
	if len(logs) != 2 || logs[1].Message != "Sandbox killed: timeout" || logs[0].Fields["template"] != "base" {
		t.Fatalf("logs = %+v", logs)
	}
	team := s.Team(DefaultTeam, Window{})
	if len(team) != 1 || team[0].Concurrent != 2 || team[0].StartRate != 2/Step.Seconds() {
		t.Fatalf("team = %+v", team)
	}
	if v, at, ok := s.MaxTeam(DefaultTeam, ConcurrentSandboxes, Window{}); !ok || v != 2 || !at.Equal(t0) {
		t.Fatalf("max = %v %v %v", v, at, ok)
	}
	if _, _, ok := s.MaxTeam(DefaultTeam, "bogus", Window{}); ok {
		t.Fatal("unknown metric accepted")
	}
	now = now.Add(time.Minute)
	s.Event("b", "killed", nil)
	s.gc() // MaxEnded 1: the older-ended a goes
	if s.Known("a") || !s.Known("b") {
		t.Fatalf("after gc: a %v b %v", s.Known("a"), s.Known("b"))
	}
	now = now.Add(2 * time.Hour)
	s.gc() // Retain: b goes too
	if s.Known("b") {
		t.Fatal("b kept past Retain")
	}
}

func TestSaveLoad(t *testing.T) {
	path := t.TempDir() + "/" + FileName
	s := New(DefaultLimits)
	s.Event("a", "created", nil)
	s.Event("gone", "created", nil)
	s.Record("a", Sample{Time: t0, MemUsed: 7})
	s.tickTeams(t0, map[string]int{DefaultTeam: 1}, Step)
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	r := New(Limits{Samples: 4, Logs: 4, TeamKeep: 4, Retain: time.Hour, MaxEnded: 4})
	if err := r.Load(path); err != nil {
		t.Fatal(err)
	}
	if smp, ok := r.Latest("a"); !ok || smp.MemUsed != 7 {
		t.Fatalf("sample not restored: %+v %v", smp, ok)
	}
	if logs, _ := r.Logs("a", LogQuery{}); len(logs) != 1 || logs[0].Message != "Sandbox created" {
		t.Fatalf("logs not restored: %+v", logs)
	}
	if len(r.Team(DefaultTeam, Window{})) != 1 {
		t.Fatal("team series not restored")
	}
	r.EndMissing(map[string]bool{"a": true})
	if r.sbx["gone"].ended.IsZero() || !r.sbx["a"].ended.IsZero() {
		t.Fatal("EndMissing")
	}
	if err := r.Load(path); err != nil { // consumed: loads nothing, no error
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := New(DefaultLimits).Load(path); err == nil {
		t.Fatal("garbage loaded")
	}
}
