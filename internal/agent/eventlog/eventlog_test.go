package eventlog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
)

func TestAfterPagesAndDropsOldest(t *testing.T) {
	l := New()
	for range Cap + 10 {
		l.Add("info", "agent", "m", nil)
	}
	p := l.After(0)
	if len(p.Events) != MaxPage || p.Events[0].Seq != 11 {
		t.Fatalf("first page: %d events from seq %d, want %d from 11", len(p.Events), p.Events[0].Seq, MaxPage)
	}
	last := p.Events[len(p.Events)-1].Seq
	p = l.After(last)
	if got := p.Events[len(p.Events)-1].Seq; got != Cap+10 {
		t.Fatalf("second page ends at %d", got)
	}
	if len(l.After(Cap+10).Events) != 0 {
		t.Fatal("events past the newest")
	}
}

func TestServeHTTP(t *testing.T) {
	l := New()
	l.Add("error", "processSvc", "Process exited with an error", map[string]string{"exit_code": "2"})
	rec := httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest("GET", "/sbx/events?after=0", nil))
	var p Page
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Boot == "" || len(p.Events) != 1 || p.Events[0].Fields["exit_code"] != "2" {
		t.Fatalf("page %+v err %v", p, err)
	}
	rec = httptest.NewRecorder()
	l.ServeHTTP(rec, httptest.NewRequest("GET", "/sbx/events?after=x", nil))
	if rec.Code != 400 {
		t.Fatalf("bad after: %d", rec.Code)
	}
}

func TestHandlerTees(t *testing.T) {
	l := New()
	var out bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&out, nil), l)).With("c", "1")
	log.Debug("hidden")
	log.Warn("careful", "k", "v")
	p := l.After(0)
	if len(p.Events) != 1 || p.Events[0].Level != "warn" || p.Events[0].Fields["k"] != "v" || p.Events[0].Fields["c"] != "1" {
		t.Fatalf("events %+v", p.Events)
	}
	if !bytes.Contains(out.Bytes(), []byte("careful")) {
		t.Fatal("record not passed on")
	}
}
