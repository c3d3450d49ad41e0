package agent

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestListenWithoutReuseAddr: the agent's listeners have SO_REUSEADDR off
// (Go turns it on), so that under gVisor no other socket can bind the
// agent's port on a specific address and take its connections (integration
// TestAgentPortKept proves that inside runsc and crun).
func TestListenWithoutReuseAddr(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rc, err := l.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	v := -1
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if v != 0 {
		t.Fatalf("SO_REUSEADDR = %d on the agent's listener, want 0", v)
	}
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial the listener: %v", err)
	}
	c.Close()
	if _, err := Listen(l.Addr().String()); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("a second listener on the port: %v, want EADDRINUSE", err)
	}
}
