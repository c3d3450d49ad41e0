package failpoint

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestFailpointsDocumented keeps docs/ARCHITECTURE.md's failpoint table
// equal to the failpoint.Hit calls in the code: each point the code has is
// listed, and each listed point exists.
func TestFailpointsDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	hit := regexp.MustCompile(`failpoint\.Hit\("([^"]+)"\)`)
	inCode := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range hit.FindAllStringSubmatch(string(b), -1) {
			inCode[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+/[a-z-]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		inDoc[m[1]] = true
	}
	if len(inCode) == 0 {
		t.Fatal("no failpoint.Hit calls found: the walk is broken")
	}
	if missing, stale := diff(inCode, inDoc), diff(inDoc, inCode); len(missing)+len(stale) > 0 {
		t.Fatalf("docs/ARCHITECTURE.md failpoint table: missing %v, not in the code %v", missing, stale)
	}
}

// diff is the sorted keys of a that b lacks.
func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
