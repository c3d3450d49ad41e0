package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-dev/sbx/internal/audit"
)

// TestAuditView: GET /sbx/audit's source gives the verify verdict of the
// daemon's own log and its newest records, newest first; a log cut short
// after a checkpoint is TRUNCATED, as `sbx audit verify` says.
func TestAuditView(t *testing.T) {
	l, src := anchoredLog(t)
	appendRecords(t, l, 5)
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	got, err := src.Audit(3)
	if err != nil {
		t.Fatal(err)
	}
	v := got.(auditView)
	if v.Verdict != "OK" || v.Records < 5 || v.AnchoredAt == nil || len(v.Newest) != 3 || v.Newest[0].Seq <= v.Newest[2].Seq {
		t.Fatalf("intact log: %+v", v)
	}

	path := filepath.Join(src.f.dataDir, audit.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:len(lines)-2], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ = src.Audit(3)
	if v := got.(auditView); v.Verdict != "TRUNCATED" {
		t.Fatalf("cut log: %+v", v)
	}
}

// TestAuditViewRotated: on a rotated log (older segments deleted) the view
// is OK, counts the records kept, says from which seq, and lists the
// newest first across the segments.
func TestAuditViewRotated(t *testing.T) {
	l, src := anchoredLog(t)
	l.SetRotation(1024, 2)
	appendRecords(t, l, 60)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := src.Audit(10)
	if err != nil {
		t.Fatal(err)
	}
	v := got.(auditView)
	if v.Verdict != "OK" || v.First <= 1 || v.Records != 60-v.First+1 || len(v.Newest) != 10 || v.Newest[0].Seq != 60 || v.Newest[9].Seq != 51 {
		t.Fatalf("rotated log: %+v", v)
	}
}

// anchoredLog opens an audit log with its anchor in fresh dirs, and the
// debug source reading them as the daemon's.
func anchoredLog(t *testing.T) (*audit.Log, debugSource) {
	data, anchor := t.TempDir(), t.TempDir()
	l, err := audit.Open(filepath.Join(data, audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	a, err := audit.OpenAnchor(anchor, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetAnchor(a); err != nil {
		t.Fatal(err)
	}
	src := debugSource{f: &Config{dataDir: data}}
	src.f.obs.anchorDir = anchor
	return l, src
}

// appendRecords appends n API records to l.
func appendRecords(t *testing.T, l *audit.Log, n int) {
	for i := 0; i < n; i++ {
		if err := l.Append("api", "", "key1", map[string]string{"i": string(rune('a' + i%26))}); err != nil {
			t.Fatal(err)
		}
	}
}
