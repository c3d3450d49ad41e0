package process

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/eventlog"
)

// TestEventsRecordStartAndEnd: each process's start and how it ended (exit
// code, error exit, lifetime timeout) reach the event log.
func TestEventsRecordStartAndEnd(t *testing.T) {
	e := newEnv(t)
	log := eventlog.New()
	e.svc.SetEvents(log)
	ok := e.run(t, "exit 0", "user")
	bad := e.run(t, "exit 7", "user")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	e.start(t, ctx, call(sh("sleep 30"), "user"))
	var got []eventlog.Event
	eventually(t, "six events", func() bool { got = log.After(0).Events; return len(got) >= 6 })
	byPid := map[string][]eventlog.Event{}
	for _, ev := range got {
		byPid[ev.Fields["pid"]] = append(byPid[ev.Fields["pid"]], ev)
	}
	check := func(pid uint32, level, msg, key, val string) {
		t.Helper()
		evs := byPid[strconv.FormatUint(uint64(pid), 10)]
		if len(evs) != 2 || evs[0].Message != "Process started" || evs[0].Fields["cmd"] == "" {
			t.Fatalf("pid %d: events %+v", pid, evs)
		}
		end := evs[1]
		if end.Level != level || end.Message != msg || end.Fields[key] != val || end.Logger != "processSvc" {
			t.Errorf("pid %d: end %+v, want %s %q %s=%s", pid, end, level, msg, key, val)
		}
	}
	check(ok.pid, "info", "Process ended", "exit_code", "0")
	check(bad.pid, "error", "Process exited with an error", "exit_code", "7")
	for pid, evs := range byPid {
		if p, _ := strconv.ParseUint(pid, 10, 32); uint32(p) != ok.pid && uint32(p) != bad.pid {
			if len(evs) != 2 || evs[1].Fields["reason"] != "timeout" || evs[1].Message != "Process killed: timeout" {
				t.Errorf("timed-out pid %s: %+v", pid, evs)
			}
		}
	}
}
