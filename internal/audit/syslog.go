package audit

import (
	"fmt"
	"log/syslog"
	"net/url"
	"sync/atomic"
)

// Syslog streams records to a syslog daemon (a copy outside the host's
// disk when remote). Records are queued: a slow or absent syslog never
// stalls Append; records past the queue are dropped and counted.
type Syslog struct {
	w       *syslog.Writer
	q       chan []byte
	dropped atomic.Uint64
	done    chan struct{}
}

// DialSyslog connects to target: "local" (the host's /dev/log) or
// udp://host:port, tcp://host:port.
func DialSyslog(target string) (*Syslog, error) {
	network, addr := "", ""
	if target != "local" {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "udp" && u.Scheme != "tcp") || u.Host == "" {
			return nil, fmt.Errorf("audit syslog %q: want local, udp://host:port or tcp://host:port", target)
		}
		network, addr = u.Scheme, u.Host
	}
	w, err := syslog.Dial(network, addr, syslog.LOG_INFO|syslog.LOG_AUTHPRIV, "sbx-audit")
	if err != nil {
		return nil, fmt.Errorf("audit syslog: %w", err)
	}
	s := &Syslog{w: w, q: make(chan []byte, 4096), done: make(chan struct{})}
	go s.run()
	return s, nil
}

// Line queues one record line (Hooks.Line); it never blocks.
func (s *Syslog) Line(line []byte) {
	select {
	case s.q <- append([]byte(nil), line[:len(line)-1]...):
	default:
		s.dropped.Add(1)
	}
}

// Dropped is how many records did not fit the queue.
func (s *Syslog) Dropped() uint64 { return s.dropped.Load() }

func (s *Syslog) run() {
	defer close(s.done)
	for b := range s.q {
		_ = s.w.Info(string(b)) // the writer reconnects on its own
	}
}

// Close flushes the queue and closes the connection (after the log's Close).
func (s *Syslog) Close() error {
	close(s.q)
	<-s.done
	return s.w.Close()
}
