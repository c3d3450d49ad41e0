package dockerfile

import (
	"os"
	"path"
	"path/filepath"
	"sort"
)

// globber runs one node-glob 13 glob (dot:true, follow:false) over the
// context: a pattern walk that keeps node-glob's rules for symlinks (a
// "**" that is not the pattern's first segment enters symlinked
// directories one level) and for ignores (see ignorer).
type globber struct {
	root     string
	ig       *ignorer
	out      map[string]bool // relative paths matched
	followed map[int]bool    // globstar segments that used their one symlink
}

// glob returns the relative paths matching pattern ("" is the root).
func glob(root, pattern string, ig *ignorer) []string {
	out := map[string]bool{}
	for _, alt := range compileGlob(pattern) {
		g := &globber{root: root, ig: ig, out: out, followed: map[int]bool{}}
		g.walk("", alt.parts, 0)
	}
	rels := make([]string, 0, len(out))
	for r := range out {
		rels = append(rels, r)
	}
	return rels
}

// walk matches parts[i:] below the entry at rel (Processor.processPatterns).
func (g *globber) walk(rel string, parts []globPart, i int) {
	if g.ig.children(rel) {
		return
	}
	for i < len(parts)-1 && isLiteral(parts[i]) {
		rel, i = join(rel, parts[i].lit), i+1
	}
	if i >= len(parts) {
		return
	}
	p := parts[i]
	switch {
	case isLiteral(p):
		g.match(join(rel, p.lit), p.lit == "" || p.lit == "." || p.lit == "..")
	case p.globstar:
		g.globstar(rel, parts, i)
	default:
		g.eachChild(rel, func(name string, _ os.FileInfo) { g.test(rel, name, parts, i) })
	}
}

// globstar handles "**" at parts[i] for the directory rel.
func (g *globber) globstar(rel string, parts []globPart, i int) {
	rest := parts[i+1:]
	if len(rest) == 0 || (len(rest) == 1 && (rest[0].lit == "" || rest[0].lit == ".") && rest[0].re == nil) {
		g.match(rel, len(rest) == 1)
	}
	if isSymlink(g.abs(rel)) && !g.canFollow(i) {
		return
	}
	g.eachChild(rel, func(name string, fi os.FileInfo) { g.globstarChild(rel, name, fi, parts, i) })
}

// globstarChild is Processor.testGlobstar for one child of a "**" walk.
func (g *globber) globstarChild(rel, name string, fi os.FileInfo, parts []globPart, i int) {
	child, rest := join(rel, name), parts[i+1:]
	if len(rest) == 0 {
		g.match(child, false)
	}
	switch {
	case fi.IsDir():
		g.walk(child, parts, i)
	case fi.Mode()&os.ModeSymlink != 0 && len(rest) > 0 && g.canFollow(i):
		g.walk(child, parts, i+1)
	case fi.Mode()&os.ModeSymlink != 0 && len(rest) == 0 && g.canFollow(i):
		g.followed[i] = true
		g.walk(child, parts, i)
	}
	if len(rest) > 0 && !(isLiteral(rest[0]) && (rest[0].lit == "" || rest[0].lit == "." || rest[0].lit == "..")) {
		g.test(rel, name, parts, i+1)
	}
}

// canFollow is Pattern.checkFollowGlobstar: a "**" other than the first
// segment may enter a symlinked directory (until it has, if it is last).
func (g *globber) canFollow(i int) bool { return i > 0 && !g.followed[i] }

// test matches the child name of rel against the segment parts[i].
func (g *globber) test(rel, name string, parts []globPart, i int) {
	if !parts[i].matchSegment(name) {
		return
	}
	if child := join(rel, name); i == len(parts)-1 {
		g.match(child, false)
	} else {
		g.walk(child, parts, i+1)
	}
}

// match records rel if it exists (and can be listed, if ifDir) and is not
// ignored.
func (g *globber) match(rel string, ifDir bool) {
	fi, err := os.Lstat(g.abs(rel))
	if err != nil || (ifDir && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0) || g.ig.ignored(rel) {
		return
	}
	g.out[rel] = true
}

// eachChild calls fn for the entries of the directory rel in name order;
// an unreadable or non-directory rel has none.
func (g *globber) eachChild(rel string, fn func(string, os.FileInfo)) {
	ents, err := os.ReadDir(g.abs(rel))
	if err != nil {
		return
	}
	sort.Slice(ents, func(a, b int) bool { return ents[a].Name() < ents[b].Name() })
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			fn(e.Name(), fi)
		}
	}
}

func (g *globber) abs(rel string) string { return filepath.Join(g.root, filepath.FromSlash(rel)) }

func isLiteral(p globPart) bool { return !p.globstar && p.re == nil }

func isSymlink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// join is node's path.join for relative posix paths, "" being the root.
func join(rel, name string) string {
	if p := path.Join(rel, name); p != "." {
		return p
	}
	return ""
}
