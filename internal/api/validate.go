package api

import (
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
			return fmt.Errorf("%w: envVars name %q must not contain '='", sandbox.ErrInvalid, k)
		}
	}
	return nil
}

// validateNetwork accepts only the network settings this node enforces:
// until the egress policy lands, sandboxes have no egress at all, so any
// request that asks for internet access beyond that is refused rather than
// silently ignored.
func validateNetwork(req newSandbox) error {
	n := req.Network
	if n == nil {
		return nil
	}
	if len(n.AllowOut) > 0 || len(n.Rules) > 0 || len(n.EgressProxy) > 0 {
		return fmt.Errorf("%w: network.allowOut, rules and egressProxy are not supported yet (sandboxes have no egress)", sandbox.ErrNotImpl)
	}
	if len(n.AllowOut)+len(n.DenyOut) > 1000 {
		return fmt.Errorf("%w: too many network rules", sandbox.ErrInvalid)
	}
	return nil
}
