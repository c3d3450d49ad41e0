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

// maxHTTPSPorts bounds network.httpsPorts.
const maxHTTPSPorts = 64

// envdPort is the port E2B's SDK reaches envd on (proxy.EnvdPort).
const envdPort = 49983

// CheckHTTPSPorts validates a network.httpsPorts (ErrInvalid): at most
// maxHTTPSPorts TCP ports, none envd's (49983), which the SDK speaks
// plain HTTP to.
func CheckHTTPSPorts(ports []int) error {
	if len(ports) > maxHTTPSPorts {
		return fmt.Errorf("%w: network.httpsPorts has more than %d ports", ErrInvalid, maxHTTPSPorts)
	}
	for _, p := range ports {
		if p < 1 || p > 65535 || p == envdPort {
			return fmt.Errorf("%w: network.httpsPorts: %d is not a sandbox port (1-65535, not envd's %d)", ErrInvalid, p, envdPort)
		}
	}
	return nil
}
