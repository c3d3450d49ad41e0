// Package sdnotify implements the service side of systemd's readiness
// protocol (sd_notify(3)): a unit of Type=notify is "started" once its main
// process sends READY=1 as one datagram to the unix socket named by
// $NOTIFY_SOCKET. A name starting with '@' is an abstract socket. Without
// $NOTIFY_SOCKET (not run by systemd, or another Type=) Notify does nothing.
package sdnotify

import (
	"fmt"
	"net"
	"os"
)

// Protocol states sent by the daemon.
const (
	Ready    = "READY=1"    // the service accepts requests
	Stopping = "STOPPING=1" // the service is shutting down
)

// Notify sends state (newline-separated VAR=value assignments) to
// $NOTIFY_SOCKET. It reports whether a socket was named; an error means one
// was named and the datagram could not be sent.
func Notify(state string) (bool, error) {
	return notifyTo(os.Getenv("NOTIFY_SOCKET"), state)
}

// notifyTo sends state to the datagram socket path; "" is no socket.
func notifyTo(path, state string) (bool, error) {
	if path == "" {
		return false, nil
	}
	if path[0] == '@' { // abstract namespace: Go spells it with a leading NUL
		path = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return true, fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return true, fmt.Errorf("sd_notify: %w", err)
	}
	return true, nil
}
