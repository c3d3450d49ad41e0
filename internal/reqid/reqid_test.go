package reqid

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		in   string
		keep bool
	}{
		{"abc-123_x.y:z", true},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{`quote"`, false},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
	} {
		got := Pick(tc.in)
		if (got == tc.in) != tc.keep || !Valid(got) {
			t.Errorf("Pick(%q) = %q, keep=%v", tc.in, got, tc.keep)
		}
	}
	if a, b := New(), New(); a == b || len(a) != 32 {
		t.Fatalf("New: %q %q", a, b)
	}
}

func TestHandlerAddsID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler{slog.NewJSONHandler(&buf, nil)})
	log.InfoContext(With(context.Background(), "r1"), "hello")
	log.Info("no ctx")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], `"request_id":"r1"`) || strings.Contains(lines[1], "request_id") {
		t.Fatalf("%q", lines)
	}
}
