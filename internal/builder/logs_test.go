package builder

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
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

// TestLineWriterLinear: a step's output is split into lines in one pass,
// however many lines a chunk holds. Before, each line found copied all of
// the chunk that was left: quadratic in the lines of a chunk, so that one
// 32 KiB chunk of newlines (the agent's chunk size, `yes ”` in a RUN step)
// took 0.1–0.8 s of the daemon's CPU, and one build held a core of the
// daemon for its step's 30 min (docs/SECURITY.md). The same 256 KiB of
// newlines is split from 4 chunks of 64 KiB and from 32 of 8 KiB: linear,
// both take about as long; quadratic, the large chunks take 8 times as
// long. A ratio within one run, not a wall-clock bound, so that a loaded
// machine or -race does not fail it.
func TestLineWriterLinear(t *testing.T) {
	split := func(chunk, n int) time.Duration {
		w := &lineWriter{log: &buildLog{}, step: "1", level: "info"}
		b := []byte(strings.Repeat("\n", chunk) + "tail")
		t0 := time.Now()
		for range n {
			_, _ = w.Write(b)
		}
		w.flush()
		if got := len(w.log.snapshot()); got != maxLogEntries+1 {
			t.Fatalf("%d entries, want %d and the limit note", got, maxLogEntries)
		}
		return time.Since(t0)
	}
	small, large := time.Hour, time.Hour
	for range 3 { // the fastest of three, interleaved
		small, large = min(small, split(8<<10, 32)), min(large, split(64<<10, 4))
	}
	if large > 3*small+100*time.Millisecond {
		t.Fatalf("256 KiB of newlines: %v in 64 KiB chunks against %v in 8 KiB ones: not linear", large, small)
	}
}

// A step's output reaches whoever reads the build's log (`sbx template
// build`, the SDK's build logger print it to a terminal): no terminal
// escape, carriage return or other control character of it stays, nor
// invalid UTF-8, and a cut line ends on a rune boundary.
func TestBuildLogControlCharacters(t *testing.T) {
	lg := &buildLog{}
	w := &lineWriter{log: lg, step: "1", level: "info"}
	hostile := "ok\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[1;1H\rfake\x00\x7f\u009b31m\xff\tend\n"
	_, _ = w.Write([]byte(hostile))
	_, _ = w.Write([]byte("x" + strings.Repeat("é", 5000) + "\n")) // cut at 8 KiB mid-rune
	lg.add("error", "1", "build failed: %s", "COPY \x1b[31mx")
	for _, e := range lg.snapshot() {
		if !utf8.ValidString(e.Message) {
			t.Errorf("invalid UTF-8 kept: %q", e.Message)
		}
		for _, r := range e.Message {
			if unicode.IsControl(r) && r != '\t' {
				t.Errorf("control character %U kept in %.80q", r, e.Message)
				break
			}
		}
	}
	if got := lg.snapshot()[0].Message; !strings.HasPrefix(got, "ok") || !strings.HasSuffix(got, "\tend") {
		t.Errorf("the text around the escapes is lost: %q", got)
	}
}
