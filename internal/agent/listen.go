package agent

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listen listens on the TCP address addr without SO_REUSEADDR (Go sets it
// on every listener). gVisor's netstack, unlike Linux, lets a second
// socket with SO_REUSEADDR bind a specific address on a port that a
// listener holding it has bound on the wildcard address, and that socket
// then takes the connections to the address: root in a runsc sandbox
// binding <sandbox IP>:49983 answered every new connection the daemon made
// to the agent (event reads, /init at a fork, proxied requests). Without
// the option on the agent's socket the bind fails with EADDRINUSE, on
// every address, as it does on Linux.
func Listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 0)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}
