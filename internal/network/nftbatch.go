package network

import (
	"fmt"

	"github.com/google/nftables"
)

// chunkSize bounds the objects queued in one nftables batch: the kernel
// acknowledges every message, and too many acknowledgements overflow the
// netlink socket (ENOBUFS) when a restart syncs hundreds of sandboxes.
const chunkSize = 32

// chunked flushes c every chunkSize calls of tick.
type chunked struct {
	c *nftables.Conn
	n int
}

func (b *chunked) tick() error {
	if b.n++; b.n%chunkSize != 0 {
		return nil
	}
	return b.flush()
}

func (b *chunked) flush() error {
	if err := b.c.Flush(); err != nil {
		return fmt.Errorf("nftables batch: %w", err)
	}
	return nil
}
