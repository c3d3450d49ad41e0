package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// TestScanLinesAsScanner: scanLines hands back every line in order, as
// bufio.ScanLines splits them, across batch boundaries, and stops when told.
func TestScanLinesAsScanner(t *testing.T) {
	long := strings.Repeat("y", batchBytes+100) // a line longer than a batch
	var many strings.Builder
	for i := range 30_000 { // ≈ 3 batches
		fmt.Fprintf(&many, "line %d %s\n", i, strings.Repeat("x", i%200))
	}
	tests := map[string]string{
		"empty":             "",
		"one":               "a\n",
		"no final newline":  "a\nb",
		"crlf":              "a\r\nb\r\n",
		"blank lines":       "\n\na\n\n",
		"a line over batch": "a\n" + long + "\nb\n",
		"many batches":      many.String(),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			var want []string
			s := bufio.NewScanner(strings.NewReader(in))
			s.Buffer(nil, maxLineSize)
			for s.Scan() {
				want = append(want, s.Text())
			}
			got := linesOf(t, strings.NewReader(in), -1)
			if len(got) != len(want) {
				t.Fatalf("got %d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("line %d: got %.40q, want %.40q", i+1, got[i], want[i])
				}
			}
		})
	}
	t.Run("stop", func(t *testing.T) {
		if got := linesOf(t, strings.NewReader(many.String()), 12_345); len(got) != 12_345 {
			t.Fatalf("got %d lines after stopping at 12345", len(got))
		}
	})
	t.Run("line too long", func(t *testing.T) {
		err := decodeLines(strings.NewReader("a\n"+strings.Repeat("z", maxLineSize+1)+"\n"), false, func(decoded) bool { return true })
		if !errors.Is(err, bufio.ErrTooLong) {
			t.Fatalf("err = %v, want bufio.ErrTooLong", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		err := decodeLines(io.MultiReader(strings.NewReader("a\n"), errReader{boom}), false, func(decoded) bool { return true })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// linesOf returns the lines scanLines hands on, stopping after stopAt of
// them if stopAt ≥ 0.
func linesOf(t *testing.T, r io.Reader, stopAt int) []string {
	t.Helper()
	var got []string
	err := scanLines(r, func(l []byte) string { return string(l) }, func(l string) bool {
		got = append(got, l)
		return stopAt < 0 || len(got) < stopAt
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestEditFoundAcrossBatches: a record edited deep in a log of many batches
// is reported at its own line, and the records before it were all handed
// on in order.
func TestEditFoundAcrossBatches(t *testing.T) {
	path := writeLog(t, 0)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12_000 { // ≈ 2.5 MB: 3 batches
		if err := l.Append("api", "sbx1", "key1", map[string]string{"i": fmt.Sprint(i), "pad": strings.Repeat("p", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	lines[10_000] = strings.Replace(lines[10_000], `"i":"10000"`, `"i":"10001"`, 1)
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	var seqs []uint64
	f, _ := os.Open(path)
	defer f.Close()
	err = Read(f, func(r Record) error { seqs = append(seqs, r.Seq); return nil })
	if err == nil || !strings.Contains(err.Error(), "line 10001 (seq 10001): hash mismatch") {
		t.Fatalf("err = %v", err)
	}
	if len(seqs) != 10_000 || seqs[9_999] != 10_000 {
		t.Fatalf("handed on %d records before the edit", len(seqs))
	}
}
