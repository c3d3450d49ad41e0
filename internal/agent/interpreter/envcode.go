package interpreter

import (
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

// applyEnvCode saves the current values of env's keys and sets env; it is
// run silently before a cell and undone by revertEnvCode after it.
func applyEnvCode(lang string, env map[string]string) string {
	keys := sortedKeys(env)
	switch lang {
	case Python:
		return "import os as __sbx_os\n__sbx_saved = {k: __sbx_os.environ.get(k) for k in " + jsonText(keys) +
			"}\n__sbx_os.environ.update(" + jsonText(env) + ")"
	case Bash:
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "__sbx_had_%[1]s=${%[1]s+x}; __sbx_old_%[1]s=${%[1]s-}; export %[1]s=%[2]s\n", k, shellQuote(env[k]))
		}
		return b.String()
	default:
		return "globalThis.__sbx_saved = Object.fromEntries(" + jsonText(keys) +
			".map(k => [k, process.env[k]])); Object.assign(process.env, " + jsonText(env) + ")"
	}
}

// revertEnvCode restores what applyEnvCode changed.
func revertEnvCode(lang string, env map[string]string) string {
	switch lang {
	case Python:
		return "for __sbx_k, __sbx_v in __sbx_saved.items():\n" +
			"    __sbx_os.environ.pop(__sbx_k, None) if __sbx_v is None else __sbx_os.environ.__setitem__(__sbx_k, __sbx_v)\n" +
			"del __sbx_saved"
	case Bash:
		var b strings.Builder
		for _, k := range sortedKeys(env) {
			fmt.Fprintf(&b, "if [ -n \"$__sbx_had_%[1]s\" ]; then export %[1]s=\"$__sbx_old_%[1]s\"; else unset %[1]s; fi; unset __sbx_had_%[1]s __sbx_old_%[1]s\n", k)
		}
		return b.String()
	default:
		return "for (const [k, v] of Object.entries(globalThis.__sbx_saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v }; delete globalThis.__sbx_saved"
	}
}

// setEnvCode sets env and unsets the keys of old that env lacks; "" when
// there is nothing to do.
func setEnvCode(lang string, env, old map[string]string) string {
	var unset []string
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
		return "import os as __sbx_os\n__sbx_os.environ.update(" + jsonText(env) + ")\nfor __sbx_k in " + jsonText(unset) +
			": __sbx_os.environ.pop(__sbx_k, None)"
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
	default:
		return "Object.assign(process.env, " + jsonText(env) + "); for (const k of " + jsonText(unset) + ") delete process.env[k]"
	}
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
