package main

import (
	"flag"
	"strings"
)

// isDockerfileBuild reports whether `sbx template build` args ask for a
// Dockerfile build through the daemon (-f or -n) rather than the build of a
// built-in template on this host.
func isDockerfileBuild(args []string) bool {
	return hasFlag(args, "f", "file", "n", "name")
}

// hasFlag reports whether args (up to a "--") set one of the named flags,
// in any of the forms the flag package takes (-x, --x, -x=v, --x=v).
func hasFlag(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, n := range names {
			if name == n {
				return true
			}
		}
	}
	return false
}

// parseInterleaved parses args whose flags may come before, between or
// after the positional arguments, and returns the positional ones. After
// a "--" everything is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// parseArgs is parseInterleaved with parseFlags' exit convention: ok is
// false when the command must end with code (0 for --help).
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterleaved(fs, args)
	switch {
	case err == flag.ErrHelp:
		return nil, 0, false
	case err != nil:
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// strList is a repeatable string flag.
type strList []string

func (l *strList) String() string { return strings.Join(*l, ",") }

func (l *strList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
