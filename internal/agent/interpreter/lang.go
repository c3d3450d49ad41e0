package interpreter

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Languages a context can run.
const (
	Python     = "python"
	JavaScript = "javascript"
	TypeScript = "typescript"
	Bash       = "bash"
	R          = "r"
	Java       = "java"
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
	case R:
		return R, nil
	case Java:
		return Java, nil
	default:
		return "", fmt.Errorf("%w: %q (supported: python, javascript, typescript, r, java, bash)", errUnsupported, lang)
	}
}

// driverFor returns how to start the driver of lang: the interpreter and
// its arguments (the embedded script among them, as a path in s.dir).
func (s *Server) driverFor(lang string) (bin string, args []string) {
	switch lang {
	case JavaScript, TypeScript:
		return s.cfg.Node, []string{s.script("node_driver.js"), lang}
	case Bash:
		return s.cfg.Python, []string{s.script("bash_driver.py")}
	case R:
		return s.cfg.Python, []string{s.script("kernel_driver.py"), "ir"} // IRkernel's kernelspec
	case Java:
		// A single-file source program that reaches its event pipe (fd 3)
		// through java.io's FileDescriptor. One JVM per context, kept small
		// and quick to start: the serial collector and the C1 compiler only
		// (about 2 s less to start and 20 MB less than with C2 as well).
		return s.cfg.Java, []string{"--add-opens=java.base/java.io=ALL-UNNAMED", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			s.script("java_driver.java")}
	default:
		return s.cfg.Python, []string{s.script("kernel_driver.py"), "python3"}
	}
}

func (s *Server) script(name string) string { return filepath.Join(s.dir, name) }
