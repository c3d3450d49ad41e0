package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeLog(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		// Hostile content: newlines and a fake record in a field.
		evil := "x\n{\"seq\":99,\"kind\":\"api\"}\n"
		if err := l.Append("process", "sbx1", "key1", map[string]string{"argv": evil, "i": string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func verify(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	err = Read(f, func(Record) error { n++; return nil })
	return n, err
}

func TestChainVerifiesAndResumes(t *testing.T) {
	path := writeLog(t, 3)
	l, err := Open(path) // reopen continues the chain
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Append("api", "", "k", nil)
	l.Close()
	if n, err := verify(path); err != nil || n != 4 {
		t.Fatalf("verify = %d, %v", n, err)
	}
}

func TestTamperDetected(t *testing.T) {
	tests := map[string]func([]string) []string{
		"edit":           func(l []string) []string { l[1] = strings.Replace(l[1], `"i":"b"`, `"i":"z"`, 1); return l },
		"delete":         func(l []string) []string { return append(l[:1], l[2:]...) },
		"reorder":        func(l []string) []string { l[0], l[1] = l[1], l[0]; return l },
		"garbage":        func(l []string) []string { return append(l, "not json") },
		"truncate first": func(l []string) []string { return l[1:] },
	}
	for name, tamper := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeLog(t, 3)
			b, _ := os.ReadFile(path)
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			out := strings.Join(tamper(lines), "\n") + "\n"
			os.WriteFile(path, []byte(out), 0o600)
			if _, err := verify(path); err == nil {
				t.Fatal("tampering not detected")
			}
			if _, err := Open(path); err == nil {
				t.Fatal("Open extended a broken chain")
			}
		})
	}
}

func TestFieldsCannotForgeLines(t *testing.T) {
	path := writeLog(t, 1)
	b, _ := os.ReadFile(path)
	if bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("one record must be one line:\n%s", b)
	}
}
