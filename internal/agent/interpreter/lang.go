package interpreter

import (
	"fmt"
	"strings"
)

// Languages a context can run.
const (
	Python     = "python"
	JavaScript = "javascript"
	TypeScript = "typescript"
	Bash       = "bash"
)

// normalizeLanguage maps a requested language to a supported one: none is
// python, "js" javascript and "ts" typescript (as the E2B server does).
func normalizeLanguage(lang string) (string, error) {
	switch l := strings.ToLower(strings.TrimSpace(lang)); l {
	case "", Python, "python3", "py":
		return Python, nil
	case JavaScript, "js", "node":
		return JavaScript, nil
	case TypeScript, "ts":
		return TypeScript, nil
	case Bash, "sh", "shell":
		return Bash, nil
	default:
		return "", fmt.Errorf("%w: %q (supported: python, javascript, typescript, bash)", errUnsupported, lang)
	}
}

// driverFor returns how to start the driver of lang: the interpreter, the
// embedded script and its arguments.
func (s *Server) driverFor(lang string) (bin, script string, args []string) {
	switch lang {
	case JavaScript, TypeScript:
		return s.cfg.Node, "node_driver.js", []string{lang}
	case Bash:
		return s.cfg.Python, "bash_driver.py", nil
	default:
		return s.cfg.Python, "kernel_driver.py", nil
	}
}
