package telemetry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAgent serves pages of events; boot and events can change per call.
func fakeAgent(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAgentEventsReadOnceAndCleaned(t *testing.T) {
	var calls atomic.Int32
	url := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Access-Token") != "tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		calls.Add(1)
		evs := []agentEvent{
			{Seq: 1, Time: time.Now(), Level: "error", Logger: "processSvc", Message: "Process exited with an error", Fields: map[string]string{"exit_code": "3"}},
			{Seq: 2, Time: time.Now().Add(48 * time.Hour), Level: "nonsense", Logger: "lifecycle", Message: strings.Repeat("x", 5000)},
		}
		var out []agentEvent
		for _, e := range evs {
			if r.URL.Query().Get("after") < "1" || e.Seq > 1 {
				out = append(out, e)
			}
		}
		_ = json.NewEncoder(w).Encode(agentPage{Boot: "b1", Events: out})
	})
	s := New(DefaultLimits)
	s.Drain(context.Background(), "a", url, "tok")
	s.Drain(context.Background(), "a", url, "tok") // nothing new
	logs, _ := s.Logs("a", LogQuery{})
	if len(logs) != 2 {
		t.Fatalf("got %d entries, want 2: %+v", len(logs), logs)
	}
	if logs[0].Level != Error || logs[0].Fields["exit_code"] != "3" {
		t.Errorf("first = %+v", logs[0])
	}
	spoof := logs[1]
	if spoof.Logger != "agent" || spoof.Level != Info || len(spoof.Message) > MaxMessage || spoof.Time.After(time.Now()) {
		t.Errorf("hostile event not cleaned: logger %q level %v len %d time %v", spoof.Logger, spoof.Level, len(spoof.Message), spoof.Time)
	}
}

func TestAgentHostileAnswers(t *testing.T) {
	tests := map[string]http.HandlerFunc{
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		},
		"huge": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"boot":"b","events":[{"seq":1,"message":"` + strings.Repeat("a", 2<<20) + `"}]}`))
		},
		"garbage": func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("not json")) },
		"huge header": func(w http.ResponseWriter, _ *http.Request) { // a valid page behind a 2 MiB header
			for range 512 {
				w.Header().Add("X-Big", strings.Repeat("a", 4096))
			}
			_, _ = w.Write([]byte(`{"boot":"b","events":[{"seq":1,"message":"m"}]}`))
		},
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		},
	}
	for name, h := range tests {
		s := New(DefaultLimits)
		t0 := time.Now()
		s.Drain(context.Background(), "a", fakeAgent(t, h), "tok")
		if s.Known("a") {
			t.Errorf("%s: something was logged", name)
		}
		if d := time.Since(t0); d > agentTimeout+time.Second {
			t.Errorf("%s: took %v", name, d)
		}
	}
}

func TestAgentRestartRereads(t *testing.T) {
	boot := "b1"
	url := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		var evs []agentEvent
		if r.URL.Query().Get("after") == "0" {
			evs = []agentEvent{{Seq: 1, Level: "info", Logger: "agent", Message: boot}}
		}
		_ = json.NewEncoder(w).Encode(agentPage{Boot: boot, Events: evs})
	})
	s := New(DefaultLimits)
	ctx := context.Background()
	s.Drain(ctx, "a", url, "t") // reads b1's event 1
	boot = "b2"
	s.Drain(ctx, "a", url, "t") // sees the new boot: resets
	s.Drain(ctx, "a", url, "t") // reads b2's event 1
	logs, _ := s.Logs("a", LogQuery{})
	if len(logs) != 2 || logs[0].Message != "b1" || logs[1].Message != "b2" {
		t.Fatalf("logs = %+v", logs)
	}
}

type fakeSource struct {
	targets []Target
	cpu     int64
}

func (f *fakeSource) Targets() []Target { return f.targets }
func (f *fakeSource) Counters(id string) (Counters, error) {
	f.cpu += int64(Step / 2) // half a core busy
	return Counters{CPUNanos: f.cpu, MemUsed: 10, DiskUsed: 20}, nil
}

func TestCollectorTick(t *testing.T) {
	s := New(DefaultLimits)
	src := &fakeSource{targets: []Target{{ID: "a", Team: DefaultTeam, CPUCount: 1, MemTotal: 100, DiskTotal: 200}}}
	c := NewCollector(s, src, nil)
	now := time.Now().Truncate(Step)
	c.Tick(now)
	time.Sleep(50 * time.Millisecond)
	c.Tick(now.Add(Step))
	got, _ := s.Samples("a", Window{})
	if len(got) != 2 || got[0].CPUUsedPct != 0 || got[1].CPUUsedPct != 100 || got[1].MemTotal != 100 || got[1].DiskUsed != 20 {
		t.Fatalf("samples = %+v", got)
	}
	if team := s.Team(DefaultTeam, Window{}); len(team) != 2 || team[1].Concurrent != 1 {
		t.Fatalf("team = %+v", team)
	}
	src.targets = nil
	c.Tick(now.Add(2 * Step))
	if len(c.prev) != 0 {
		t.Fatal("CPU mark of a gone sandbox kept")
	}
}

func TestCollectorReadsAgents(t *testing.T) {
	url := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(agentPage{Boot: "b", Events: []agentEvent{{Seq: 1, Level: "info", Logger: "processSvc", Message: "Process started"}}})
	})
	s := New(DefaultLimits)
	src := &fakeSource{targets: []Target{{ID: "a", Team: DefaultTeam, Agent: url, Token: "t"}, {ID: "paused", Team: DefaultTeam}}}
	c := NewCollector(s, src, nil)
	c.ReadAgents(context.Background())
	c.ReadAgents(context.Background())
	if logs, _ := s.Logs("a", LogQuery{}); len(logs) != 1 || logs[0].Message != "Process started" {
		t.Fatalf("logs = %+v", logs)
	}
	if s.Known("paused") {
		t.Fatal("a sandbox without an agent address was read")
	}
	src.targets = nil
	c.ReadAgents(context.Background())
	if len(s.agents.cursor) != 0 {
		t.Fatal("cursor of a gone sandbox kept")
	}
}

// TestStalledAgentsRest: a tenant's stalled agents (root inside can stop
// the agent, or answer on its port and never finish) cost the collector one
// timed-out read each and are then left unread a while, so that the next
// rounds read every other sandbox's agent at once; a stalled agent is still
// read at its sandbox's end (Drain). Before, each round waited
// agentTimeout for every agentParallel stalled agents: 16 of them delayed
// another tenant's logs by 4 s every round.
func TestStalledAgentsRest(t *testing.T) {
	var stalledReads atomic.Int32
	stalled := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		stalledReads.Add(1)
		<-r.Context().Done()
	})
	var seq atomic.Uint64
	good := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		n := seq.Add(1)
		_ = json.NewEncoder(w).Encode(agentPage{Boot: "b", Events: []agentEvent{{Seq: n, Level: "info", Logger: "agent", Message: "m"}}})
	})
	var targets []Target
	for i := range 2 * agentParallel {
		targets = append(targets, Target{ID: "stalled" + strconv.Itoa(i), Team: "hostile", Agent: stalled, Token: "t"})
	}
	targets = append(targets, Target{ID: "good", Team: "other", Agent: good, Token: "t"})
	s := New(DefaultLimits)
	c := NewCollector(s, &fakeSource{targets: targets}, nil)
	c.ReadAgents(context.Background()) // every stalled agent times out once
	first := stalledReads.Load()
	for round := range 3 {
		t0 := time.Now()
		c.ReadAgents(context.Background())
		if d := time.Since(t0); d > agentTimeout/2 {
			t.Fatalf("round %d after the stalled agents timed out took %v", round, d)
		}
	}
	if n := stalledReads.Load(); n != first {
		t.Fatalf("resting agents read %d more times", n-first)
	}
	if logs, _ := s.Logs("good", LogQuery{}); len(logs) != 4 {
		t.Fatalf("the other tenant's agent: %d entries after 4 rounds, want 4", len(logs))
	}
	s.Drain(context.Background(), "stalled0", stalled, "t")
	if stalledReads.Load() != first+1 {
		t.Fatal("a resting agent was not read at its sandbox's end")
	}
}
