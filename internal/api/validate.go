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
			return fmt.Errorf("%w: envVars name %q must not contain '='", sandbox.ErrInvalid, k)
		}
	}
	return nil
}

// validateNetwork accepts the network settings this node enforces: the
// egress policy (allow_internet_access, allowOut, denyOut: bad rules are
// 400) and allowPublicTraffic. Header rules and an egress proxy are not
// enforced, so asking for them is refused (501) rather than ignored.
func validateNetwork(allowNet *bool, n *networkConfig) error {
	if n != nil && (len(n.Rules) > 0 || len(n.EgressProxy) > 0) {
		return fmt.Errorf("%w: network.rules and egressProxy are not supported yet", sandbox.ErrNotImpl)
	}
	var raw []byte
	if n != nil {
		raw, _ = json.Marshal(n)
	}
	_, err := sandbox.NetworkPolicy(allowNet, raw)
	return err
}
