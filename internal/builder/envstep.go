package builder

import (
	"os"
	"strings"
)

// An ENV step's values are evaluated when the step runs, as E2B's build
// server does (orchestrator commands/env.go runs `printf "<value>"` as root
// in the build sandbox): "$PATH" in `ENV PATH=/opt/bin:$PATH` (a Dockerfile's
// most common ENV, kept by the Dockerfile conversion because the image's
// PATH is unknown there) or `setEnvs({PATH: '/opt/bin:$PATH'})` is the PATH
// the build has so far. Before, the value was kept as written, so every
// later step and sandbox had PATH "/opt/bin:$PATH" and found no mkdir.
// Here it is evaluated on the host, $NAME, ${NAME}, ${NAME:-word} and
// ${NAME-word} only (no command substitution, quotes or escapes).

// envDefaults are the variables a root process in a build sandbox has
// besides the template's env (the agent's process.environ).
var envDefaults = map[string]string{
	"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME": "/root", "USER": "root", "LOGNAME": "root",
}

// applyEnv sets the ENV step's pairs kv (k1, v1, k2, v2, ...) in env, each
// value evaluated against env as it stands (earlier pairs included).
func applyEnv(env map[string]string, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = expandEnv(kv[i+1], env)
	}
}

// expandEnv evaluates the variable references in v against env, then
// envDefaults; an unset variable is empty, as in a shell.
func expandEnv(v string, env map[string]string) string {
	if !strings.Contains(v, "$") {
		return v
	}
	return os.Expand(v, func(ref string) string {
		name, word, form := splitDefault(ref)
		val, set := env[name]
		if !set {
			val, set = envDefaults[name]
		}
		switch {
		case !shellName(name):
			return "$" + ref // $$, $1, $?: not a variable of ours, kept
		case form == ":-" && val == "", form == "-" && !set:
			return word
		}
		return val
	})
}

// splitDefault splits "NAME:-word" and "NAME-word"; form is "" without one.
func splitDefault(ref string) (name, word, form string) {
	if n, w, ok := strings.Cut(ref, ":-"); ok {
		return n, w, ":-"
	}
	if n, w, ok := strings.Cut(ref, "-"); ok {
		return n, w, "-"
	}
	return ref, "", ""
}

// shellName reports whether s is a shell variable name.
func shellName(s string) bool {
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}
