package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// maxMaskHost bounds network.maskRequestHost: a DNS name and a port.
const maxMaskHost = 253 + len(":${PORT}")

// MaskHost is E2B's network.maskRequestHost applied: the Host header a
// request to the sandbox's port carries, mask with every "${PORT}" replaced
// by the port.
func MaskHost(mask string, port int) string {
	return strings.ReplaceAll(mask, "${PORT}", strconv.Itoa(port))
}

// CheckMaskHost validates a maskRequestHost (ErrInvalid): non-empty, at
// most maxMaskHost bytes, and, with its ${PORT}s replaced, only the bytes a
// Host header's host[:port] may hold (letters, digits, ".-_:[]"), so the
// header sent to the sandbox is always well formed.
func CheckMaskHost(mask string) error {
	if mask == "" || len(mask) > maxMaskHost {
		return fmt.Errorf("%w: network.maskRequestHost must be 1 to %d bytes", ErrInvalid, maxMaskHost)
	}
	for _, c := range MaskHost(mask, 1) {
		if !hostByte(c) {
			return fmt.Errorf("%w: network.maskRequestHost %.64q: %q is not allowed in a host (letters, digits, \".-_:[]\" and ${PORT})", ErrInvalid, mask, c)
		}
	}
	return nil
}

func hostByte(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_:[]", c)
}
