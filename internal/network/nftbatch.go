package network

import (
	"fmt"

	"github.com/google/nftables"
)

// chunkSize bounds the messages queued in one nftables batch: the kernel
// acknowledges every message, and too many acknowledgements overflow the
// netlink socket (ENOBUFS) when a restart syncs hundreds of sandboxes.
const chunkSize = 32

// sandboxMsgs is about the number of messages batchAdd queues.
const sandboxMsgs = 16

// chunked flushes c every chunkSize calls of tick.
type chunked struct {
	c *nftables.Conn
	n int
}

func (b *chunked) tick() error { return b.tickN(1) }

// tickN counts n queued messages and flushes once chunkSize are queued.
func (b *chunked) tickN(n int) error {
	if b.n += n; b.n < chunkSize {
		return nil
	}
	b.n = 0
	return b.flush()
}

func (b *chunked) flush() error {
	if err := b.c.Flush(); err != nil {
		return fmt.Errorf("nftables batch: %w", err)
	}
	return nil
}
