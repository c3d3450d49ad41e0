package dockerfile

import (
	"regexp"
	"strings"
)

// This file is the subset of minimatch (as node-glob 13 uses it, dot:true)
// that COPY sources and .dockerignore lines need: * ? [...] ** and {a,b}.
// Extglobs (+(a|b) and such) are not supported and match literally.

// globPart is one "/"-separated segment of a pattern.
type globPart struct {
	globstar bool           // "**"
	lit      string         // the segment, when it has no magic
	re       *regexp.Regexp // the segment, when it has magic
}

// globPattern is one brace alternative of a pattern.
type globPattern struct {
	parts []globPart
	abs   bool // began with "/"
}

// compileGlob compiles pattern into its brace alternatives. Leading "./"
// and inner "." segments are dropped and repeated "**" collapsed, as
// minimatch's optimization does.
func compileGlob(pattern string) []globPattern {
	var out []globPattern
	for _, alt := range expandBraces(pattern) {
		out = append(out, compileAlt(alt))
	}
	return out
}

func compileAlt(alt string) globPattern {
	p := globPattern{abs: strings.HasPrefix(alt, "/")}
	segs := strings.Split(strings.TrimPrefix(alt, "/"), "/")
	for i, s := range segs {
		if s == "." && len(segs) > 1 && i < len(segs)-1 {
			continue
		}
		if s == "**" && len(p.parts) > 0 && p.parts[len(p.parts)-1].globstar {
			continue
		}
		p.parts = append(p.parts, compilePart(s))
	}
	return p
}

func compilePart(s string) globPart {
	if s == "**" {
		return globPart{globstar: true}
	}
	re, magic := segmentRegexp(s)
	if !magic {
		return globPart{lit: unescape(s)}
	}
	return globPart{re: regexp.MustCompile(re)}
}

// segmentRegexp translates one segment; magic reports whether it has any
// wildcard. An unclosed "[" is literal, as in minimatch.
func segmentRegexp(s string) (re string, magic bool) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '\\':
			if i+1 < len(s) {
				i++
			}
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		case '*':
			b.WriteString(`[^/]*`)
			magic = true
		case '?':
			b.WriteString(`[^/]`)
			magic = true
		case '[':
			class, n := bracketClass(s[i:])
			if n == 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i += n - 1
			magic = true
		default:
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		}
	}
	return b.String() + "$", magic
}

// bracketClass translates a leading [...] class; n is its length, 0 if
// it is not closed (then "[" is literal).
func bracketClass(s string) (class string, n int) {
	var b strings.Builder
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteString("^/")
		i++
	}
	for start := i; i < len(s); i++ {
		switch c := s[i]; {
		case c == ']' && i > start:
			return "[" + b.String() + "]", i + 1
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteString(classChar(s[i], true))
		case c == '[' && strings.HasPrefix(s[i:], "[:") && strings.Contains(s[i+2:], ":]"):
			end := i + 2 + strings.Index(s[i+2:], ":]") + 2
			b.WriteString(s[i:end])
			i = end - 1
		default:
			b.WriteString(classChar(c, false))
		}
	}
	return "", 0
}

// classChar writes c inside a regexp class; escaped means it came after a
// backslash and is literal even if it is "-".
func classChar(c byte, escaped bool) string {
	if strings.IndexByte(`\[]^`, c) >= 0 || (escaped && c == '-') {
		return `\` + string(c)
	}
	return string(c)
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// match reports whether the "/"-separated path matches p, with minimatch's
// rules: segments "." and ".." match no wildcard and no "**", and a path
// with one trailing "/" matches a pattern without it.
func (p globPattern) match(path string) bool {
	return matchParts(strings.Split(path, "/"), p.parts)
}

func matchParts(file []string, pat []globPart) bool {
	fi, pi := 0, 0
	for ; fi < len(file) && pi < len(pat); fi, pi = fi+1, pi+1 {
		if pat[pi].globstar {
			return matchGlobstar(file[fi:], pat[pi+1:])
		}
		if !pat[pi].matchSegment(file[fi]) {
			return false
		}
	}
	switch {
	case fi == len(file) && pi == len(pat):
		return true
	case fi == len(file):
		return false
	default:
		return fi == len(file)-1 && file[fi] == ""
	}
}

// matchGlobstar matches file against "**" followed by rest.
func matchGlobstar(file []string, rest []globPart) bool {
	if len(rest) == 0 {
		for _, f := range file {
			if f == "." || f == ".." {
				return false
			}
		}
		return true
	}
	for fr := 0; fr < len(file); fr++ {
		if matchParts(file[fr:], rest) {
			return true
		}
		if file[fr] == "." || file[fr] == ".." {
			return false
		}
	}
	return false
}

func (g globPart) matchSegment(f string) bool {
	if g.re == nil {
		return g.lit == f
	}
	return f != "" && f != "." && f != ".." && g.re.MatchString(f)
}
