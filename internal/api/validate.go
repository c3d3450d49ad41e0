package api

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// Bounds on user-supplied maps, so one sandbox record stays small.
const (
	maxMapEntries = 100
	maxKeyLen     = 256
	maxValueLen   = 4096
)

func validateStrings(m map[string]string, what string) error {
	if len(m) > maxMapEntries {
		return fmt.Errorf("%w: %s has more than %d entries", sandbox.ErrInvalid, what, maxMapEntries)
	}
	for k, v := range m {
		if k == "" || len(k) > maxKeyLen || len(v) > maxValueLen {
			return fmt.Errorf("%w: %s key must be 1-%d bytes and value at most %d bytes", sandbox.ErrInvalid, what, maxKeyLen, maxValueLen)
		}
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: %s must not contain NUL bytes", sandbox.ErrInvalid, what)
		}
	}
	return nil
}

func validateEnv(env map[string]string) error {
	if err := validateStrings(env, "envVars"); err != nil {
		return err
	}
	for k := range env {
		if strings.ContainsAny(k, "=") {
			return fmt.Errorf("%w: envVars name %.64q must not contain '='", sandbox.ErrInvalid, k)
		}
	}
	return nil
}

// unsupportedFields refuses, naming it, the first create field E2B defines
// that this server cannot honour: ignoring it would let the caller believe it
// took effect. (Fields E2B does not define are ignored by decode.)
func unsupportedFields(req newSandbox) error {
	for _, f := range []struct {
		name, why string
		set       bool
	}{
		{"mcp", "there is no MCP gateway in sbx sandboxes", present(req.MCP)},
		{"iam", "sbx issues no workload identity tokens", present(req.IAM)},
	} {
		if f.set {
			return fmt.Errorf("%w: %s is not supported by this server (%s); remove it from the request", sandbox.ErrInvalid, f.name, f.why)
		}
	}
	return nil
}

// present reports whether an optional JSON value was sent (and is not null).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
