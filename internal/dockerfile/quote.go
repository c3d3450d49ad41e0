package dockerfile

import (
	"regexp"
	"strings"
)

// unsafeShellChar is the SDK's UNSAFE_SHELL_CHAR: anything else needs quotes.
var unsafeShellChar = regexp.MustCompile(`[^\w@%+=:,./-]`)

// shellQuote quotes s for a POSIX shell the way the SDK's shellQuote does:
// as is when safe, else in single quotes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if !unsafeShellChar.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// shellJoin turns an exec-form argument list into one shell command line
// that runs the same argv.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}
