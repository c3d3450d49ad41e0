package dockerfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadDockerignore returns the patterns of contextDir/.dockerignore as the
// SDK reads them: trimmed lines, without blanks and # comments. A missing
// file is no patterns.
//
// The SDK hands them to node-glob as ignore patterns, which is not Docker's
// semantics: a pattern drops the paths it matches, but drops a directory's
// contents only if it ends in "/**" (so "node_modules" keeps
// node_modules/x, "node_modules/**" drops it), "!" is literal, and a
// leading "/" anchors at the filesystem root. FilesHash and TarContext
// follow the SDK so that both compute the same hash for the same context.
func ReadDockerignore(contextDir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(contextDir, ".dockerignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading .dockerignore: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, nil
}

// ignorer is node-glob's Ignore: which paths the patterns drop, and under
// which directories the walk does not go.
type ignorer struct {
	root           string // absolute context directory
	all, childrenP []globPattern
}

func newIgnorer(root string, patterns []string) *ignorer {
	ig := &ignorer{root: root}
	for _, p := range patterns {
		for _, alt := range compileGlob(p) {
			ig.all = append(ig.all, alt)
			if n := len(alt.parts); n > 0 && alt.parts[n-1].globstar {
				ig.childrenP = append(ig.childrenP, alt)
			}
		}
	}
	return ig
}

// ignored reports whether the entry at rel ("" for the root) is dropped.
func (ig *ignorer) ignored(rel string) bool {
	for _, p := range ig.all {
		t := ig.target(p, rel)
		if p.match(t) || p.match(t+"/") {
			return true
		}
	}
	return false
}

// children reports whether the walk must not enter the directory at rel.
func (ig *ignorer) children(rel string) bool {
	for _, p := range ig.childrenP {
		if p.match(ig.target(p, rel) + "/") {
			return true
		}
	}
	return false
}

// target is what p is matched against: the relative path ("." for the
// root), or the absolute one (without its leading "/") if p is absolute.
func (ig *ignorer) target(p globPattern, rel string) string {
	if p.abs {
		return strings.TrimPrefix(filepath.ToSlash(filepath.Join(ig.root, rel)), "/")
	}
	if rel == "" {
		return "."
	}
	return rel
}
