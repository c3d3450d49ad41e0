// Package socks5test is a small SOCKS5 server (RFC 1928 CONNECT, RFC 1929
// username/password) for tests: it records every destination it is asked
// for, as the client sent it (a domain name stays a name), and dials them
// with a dialer the test chooses (e.g. bound to a source address the
// upstream can tell apart).
package socks5test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
)

// Server is a SOCKS5 server. Set the fields before Serve.
type Server struct {
	// Username and Password, when Username is set, are required (method
	// 0x02); otherwise only no-auth (0x00) is accepted.
	Username, Password string
	// Dial opens the upstream connection; net.Dialer when nil.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu       sync.Mutex
	requests []string // "host:port" as asked, in order
	authFail int
	open     int // tunnels being served
	ln       net.Listener
	wg       sync.WaitGroup
}

// Start listens on addr ("127.0.0.1:0") and serves until Close.
func (s *Server) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	return ln.Addr().String(), nil
}

// Close stops accepting (open tunnels end with their peers).
func (s *Server) Close() error {
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// Requests returns the destinations asked for so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Open returns the number of tunnels open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// AuthFailures counts rejected credentials.
func (s *Server) AuthFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authFail
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	if !s.auth(c) {
		return
	}
	dst, ok := readRequest(c)
	if !ok {
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, dst)
	s.mu.Unlock()
	up, err := s.dial(dst)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return
	}
	defer up.Close()
	s.mu.Lock()
	s.open++
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.open--; s.mu.Unlock() }()
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, c); closeWrite(up); close(done) }()
	_, _ = io.Copy(c, up)
	closeWrite(c)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

func (s *Server) dial(addr string) (net.Conn, error) {
	if s.Dial != nil {
		return s.Dial(context.Background(), "tcp", addr)
	}
	return net.Dial("tcp", addr)
}

// auth runs method selection and, with credentials configured, RFC 1929.
func (s *Server) auth(c net.Conn) bool {
	h := make([]byte, 2)
	if _, err := io.ReadFull(c, h); err != nil || h[0] != 5 {
		return false
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return false
	}
	want := byte(0)
	if s.Username != "" {
		want = 2
	}
	if !contains(methods, want) {
		_, _ = c.Write([]byte{5, 0xff})
		return false
	}
	if _, err := c.Write([]byte{5, want}); err != nil || want == 0 {
		return err == nil
	}
	user, pass, ok := readUserPass(c)
	if !ok {
		return false
	}
	if user != s.Username || pass != s.Password {
		s.mu.Lock()
		s.authFail++
		s.mu.Unlock()
		_, _ = c.Write([]byte{1, 1})
		return false
	}
	_, err := c.Write([]byte{1, 0})
	return err == nil
}

func contains(b []byte, x byte) bool {
	for _, v := range b {
		if v == x {
			return true
		}
	}
	return false
}

func readUserPass(r io.Reader) (user, pass string, ok bool) {
	field := func() (string, bool) {
		var l [1]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return "", false
		}
		b := make([]byte, l[0])
		_, err := io.ReadFull(r, b)
		return string(b), err == nil
	}
	var v [1]byte
	if _, err := io.ReadFull(r, v[:]); err != nil || v[0] != 1 {
		return "", "", false
	}
	if user, ok = field(); ok {
		pass, ok = field()
	}
	return user, pass, ok
}

// readRequest reads a CONNECT request and returns its destination.
func readRequest(r io.Reader) (string, bool) {
	h := make([]byte, 4)
	if _, err := io.ReadFull(r, h); err != nil || h[0] != 5 || h[1] != 1 {
		return "", false
	}
	var host string
	switch h[3] {
	case 1, 4:
		b := make([]byte, map[byte]int{1: 4, 4: 16}[h[3]])
		if _, err := io.ReadFull(r, b); err != nil {
			return "", false
		}
		ip, _ := netip.AddrFromSlice(b)
		host = ip.String()
	case 3:
		var l [1]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return "", false
		}
		b := make([]byte, l[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return "", false
		}
		host = string(b)
	default:
		return "", false
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(p[:])))), true
}
