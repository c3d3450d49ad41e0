package dnsfilter

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/miekg/dns"
)

// Listen opens the UDP and TCP sockets of a DNS filter on ip:port; port 0
// picks one free for both protocols. The returned port is the one to
// redirect sandbox DNS to.
func Listen(ip string, port uint16) (net.PacketConn, net.Listener, uint16, error) {
	var err error
	for try := 0; try < 20; try++ {
		var pc net.PacketConn
		pc, err = net.ListenPacket("udp4", net.JoinHostPort(ip, strconv.Itoa(int(port))))
		if err != nil {
			return nil, nil, 0, fmt.Errorf("dns filter: %w", err)
		}
		p := uint16(pc.LocalAddr().(*net.UDPAddr).Port)
		var ln net.Listener
		if ln, err = net.Listen("tcp4", net.JoinHostPort(ip, strconv.Itoa(int(p)))); err == nil {
			return pc, ln, p, nil
		}
		pc.Close()
		if port != 0 {
			break
		}
	}
	return nil, nil, 0, fmt.Errorf("dns filter: %w", err)
}

// Serve answers DNS on pc and ln (from Listen) until ctx ends, then closes
// them.
func (f *Filter) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	f.init()
	errc := make(chan error, 2)
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: f}, {Listener: ln, Handler: f}} {
		f.mu.Lock()
		f.servers = append(f.servers, s)
		f.mu.Unlock()
		go func() { errc <- s.ActivateAndServe() }()
	}
	select {
	case err := <-errc:
		f.shutdown()
		return fmt.Errorf("dns filter: %w", err)
	case <-ctx.Done():
		f.shutdown()
		return nil
	}
}

// clampTTL lowers every answer's TTL to MaxTTL (if set), so a sandbox never
// caches an address longer than the kernel keeps it open.
func (f *Filter) clampTTL(resp *dns.Msg) {
	if f.MaxTTL <= 0 {
		return
	}
	limit := uint32(f.MaxTTL.Seconds())
	for _, rr := range resp.Answer {
		if h := rr.Header(); h.Ttl > limit {
			h.Ttl = limit
		}
	}
}
