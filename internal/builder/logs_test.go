package builder

import (
	"strings"
	"testing"
)

// A step that prints without end fills neither memory nor disk: the log
// stops at its bounds with one note, and its file holds what it kept.
func TestBuildLogBounds(t *testing.T) {
	dir := t.TempDir()
	lg, err := openLog(dir, "b1")
	if err != nil {
		t.Fatal(err)
	}
	w := &lineWriter{log: lg, step: "1", level: "info"}
	line := strings.Repeat("x", 1000) + "\n"
	for range 10000 {
		_, _ = w.Write([]byte(line))
	}
	w.flush()
	lg.close()
	got := lg.snapshot()
	if n := len(got); n > maxLogBytes/1000+2 {
		t.Fatalf("%d entries kept", n)
	}
	if last := got[len(got)-1]; last.Level != "warn" || !strings.Contains(last.Message, "limit") {
		t.Fatalf("last entry %+v, want the limit note", last)
	}
	if disk := readLog(dir, "b1"); len(disk) != len(got)-1 {
		t.Fatalf("disk holds %d entries, memory %d", len(disk), len(got))
	}
	long := &lineWriter{log: &buildLog{}, step: "1", level: "info"}
	_, _ = long.Write([]byte(strings.Repeat("y", 100<<10))) // no newline: cut into entries
	if es := long.log.snapshot(); len(es) == 0 || len(es[0].Message) > 8<<10+4 {
		t.Fatalf("a line without end: %d entries, first %d bytes", len(es), len(es[0].Message))
	}
}
