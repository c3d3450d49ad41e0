package interpreter

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateEnv checks a request's env_vars for lang.
func validateEnv(lang string, env map[string]string) error {
	for k, v := range env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0):
			return fmt.Errorf("%w: invalid environment variable %q", errBadRequest, k)
		case lang == Bash && !shellName.MatchString(k):
			return fmt.Errorf("%w: %q is not a valid bash variable name", errBadRequest, k)
		}
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v) // strings only: cannot fail
	return string(b)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// pythonEnvCode applies a python cell's env_vars and reverts them
// (env_python.py), run by exec in a namespace of its own.
//
//go:embed env_python.py
var pythonEnvCode string

// applyEnvCode saves the current values of env's keys and sets env; it is
// run silently before a cell and undone by revertEnvCode after it. In
// python, a key the cell sets or deletes itself keeps what the cell did
// (E2B's template).
func applyEnvCode(lang string, env map[string]string) string {
	keys := sortedKeys(env)
	switch lang {
	case Python:
		return "exec(" + jsonText(pythonEnvCode) + ", {'ENV': " + jsonText(env) + "})"
	case Bash:
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "__sbx_had_%[1]s=${%[1]s+x}; __sbx_old_%[1]s=${%[1]s-}; export %[1]s=%[2]s\n", k, shellQuote(env[k]))
		}
		return b.String()
	case R:
		return ".sbx_saved <- Sys.getenv(" + rVector(keys) + ", unset = NA, names = TRUE)\n" + rSetenv(env)
	case Java:
		return "java.util.Map<String, String> __sbx_saved = new java.util.HashMap<>();\n" +
			"for (String[] __sbx_kv : " + javaPairs(env) + ") { __sbx_saved.put(__sbx_kv[0], System.getProperty(__sbx_kv[0])); System.setProperty(__sbx_kv[0], __sbx_kv[1]); }"
	default:
		return "globalThis.__sbx_saved = Object.fromEntries(" + jsonText(keys) +
			".map(k => [k, process.env[k]])); Object.assign(process.env, " + jsonText(env) + ")"
	}
}

// revertEnvCode restores what applyEnvCode changed.
func revertEnvCode(lang string, env map[string]string) string {
	switch lang {
	case Python:
		return "exec(" + jsonText(pythonEnvCode) + ", {'ENV': None})"
	case Bash:
		var b strings.Builder
		for _, k := range sortedKeys(env) {
			fmt.Fprintf(&b, "if [ -n \"$__sbx_had_%[1]s\" ]; then export %[1]s=\"$__sbx_old_%[1]s\"; else unset %[1]s; fi; unset __sbx_had_%[1]s __sbx_old_%[1]s\n", k)
		}
		return b.String()
	case R:
		return "for (.sbx_k in names(.sbx_saved)) if (is.na(.sbx_saved[[.sbx_k]])) Sys.unsetenv(.sbx_k) else " +
			"do.call(Sys.setenv, setNames(list(.sbx_saved[[.sbx_k]]), .sbx_k))\nsuppressWarnings(rm(.sbx_saved, .sbx_k))"
	case Java:
		return "__sbx_saved.forEach((k, v) -> { if (v == null) System.clearProperty(k); else System.setProperty(k, v); });\n__sbx_saved = null;"
	default:
		return "for (const [k, v] of Object.entries(globalThis.__sbx_saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v }; delete globalThis.__sbx_saved"
	}
}

// setEnvCode sets env and unsets the keys of old that env lacks; "" when
// there is nothing to do.
func setEnvCode(lang string, env, old map[string]string) string {
	unset := []string{} // [] in JSON, not null
	for k := range old {
		if _, ok := env[k]; !ok {
			unset = append(unset, k)
		}
	}
	slices.Sort(unset)
	if len(env) == 0 && len(unset) == 0 {
		return ""
	}
	switch lang {
	case Python:
		return "exec('import os\\nos.environ.update(E)\\nfor k in U: os.environ.pop(k, None)', {'E': " +
			jsonText(env) + ", 'U': " + jsonText(unset) + "})"
	case Bash:
		var b strings.Builder
		for _, k := range sortedKeys(env) {
			if shellName.MatchString(k) {
				fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
			}
		}
		for _, k := range unset {
			if shellName.MatchString(k) {
				fmt.Fprintf(&b, "unset %s\n", k)
			}
		}
		return b.String()
	case R:
		code := rSetenv(env)
		if len(unset) > 0 {
			code += "\ninvisible(Sys.unsetenv(" + rVector(unset) + "))"
		}
		return code
	case Java:
		return "for (String[] __sbx_kv : " + javaPairs(env) + ") System.setProperty(__sbx_kv[0], __sbx_kv[1]);\n" +
			"for (String __sbx_k : new String[] {" + strings.Join(quoteAll(unset), ", ") + "}) System.clearProperty(__sbx_k);"
	default:
		return "Object.assign(process.env, " + jsonText(env) + "); for (const k of " + jsonText(unset) + ") delete process.env[k]"
	}
}

// startEnvCode is what a fresh driver of lang runs before its first cell:
// for java, the sandbox's env vars as system properties (where E2B's Java
// kernel has them: System.getProperty, as java cannot change its
// environment); "" for the others, whose process environment has them.
func startEnvCode(lang string, env map[string]string) string {
	if lang != Java || len(env) == 0 {
		return ""
	}
	return setEnvCode(lang, env, nil)
}

// quoteAll quotes each of ss as a JSON string, which is also a valid R and
// Java string literal (Go's encoder escapes every control character and
// leaves no backslash that Java would read as a \u escape).
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = jsonText(s)
	}
	return out
}

// rVector is ss as an R character vector.
func rVector(ss []string) string { return "c(" + strings.Join(quoteAll(ss), ", ") + ")" }

// rSetenv is R code setting env ("" when empty).
func rSetenv(env map[string]string) string {
	if len(env) == 0 {
		return ""
	}
	keys := sortedKeys(env)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = env[k]
	}
	return "invisible(do.call(Sys.setenv, as.list(setNames(" + rVector(vals) + ", " + rVector(keys) + "))))"
}

// javaPairs is env as a Java String[][] of {key, value}.
func javaPairs(env map[string]string) string {
	var b strings.Builder
	b.WriteString("new String[][] {")
	for i, k := range sortedKeys(env) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{%s, %s}", jsonText(k), jsonText(env[k]))
	}
	b.WriteString("}")
	return b.String()
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
