package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestLogRingKeepsNewest(t *testing.T) {
	r := newLogRing()
	for i := range ringLines + 10 {
		fmt.Fprintf(r, "line %d\n", i)
	}
	got := r.Last(3)
	want := []string{fmt.Sprintf("line %d\n", ringLines+7), fmt.Sprintf("line %d\n", ringLines+8), fmt.Sprintf("line %d\n", ringLines+9)}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("Last(3) = %q", got)
	}
	if n := len(r.Last(ringLines * 2)); n != ringLines {
		t.Fatalf("kept %d lines", n)
	}
	_, _ = r.Write([]byte(strings.Repeat("x", ringLineMax*2)))
	if l := r.Last(1)[0]; len(l) > ringLineMax+8 {
		t.Fatalf("long line kept at %d bytes", len(l))
	}
}

func TestDebugConfigRedacts(t *testing.T) {
	f, err := ParseFlags([]string{"--registry-mirror", "https://user:hunter2@mirror.example", "--audit-syslog", "tcp://u:pw@log.example:514"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(debugSource{f: f, ring: newLogRing()}.Config())
	s := string(b)
	if strings.Contains(s, "hunter2") || strings.Contains(s, "pw@") || !strings.Contains(s, `"listen":"127.0.0.1:3000"`) {
		t.Fatalf("config: %s", s)
	}
}

func TestServeFlagsObservability(t *testing.T) {
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--audit-checkpoint-every", "10ms"},
		{"--audit-max-mb", "0.001"}, {"--audit-max-mb", "-1"}, {"--audit-max-mb", "NaN"}, {"--audit-max-mb", "+Inf"}, {"--audit-keep", "-1"}} {
		if _, err := ParseFlags(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range [][]string{{"--audit-max-mb", "0"}, {"--audit-max-mb", "0.05", "--audit-keep", "0"}} {
		if _, err := ParseFlags(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	f, err := ParseFlags(nil)
	if err != nil || f.obs.auditMaxMB != 100 || f.obs.auditKeep != 10 {
		t.Fatalf("audit rotation defaults: %+v %v", f.obs, err)
	}
}

// TestMetricsListenerServesPprof: the unauthenticated listener has
// /metrics and pprof.
func TestMetricsListenerServesPprof(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := serveMetrics(ctx, addr, newMetrics(), discardLog()); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/metrics": "go_goroutines", "/debug/pprof/": "goroutine"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %.200s", path, resp.StatusCode, b)
		}
	}
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
