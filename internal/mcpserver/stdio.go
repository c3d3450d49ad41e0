package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainingTransport is newline-delimited JSON-RPC over in and out (stdio)
// that finishes the requests it has read before it reports end of input:
// when in ends, the server sees EOF only once a response has been written
// for every request read (or ctx ends). A client that writes its requests
// and closes its end (`echo ... | sbx mcp`) still gets every answer; the
// plain stdio transport would stop at EOF and drop calls still running.
func DrainingTransport(ctx context.Context, in io.Reader, out io.Writer) mcp.Transport {
	c := &drainCounter{ctx: ctx}
	c.cond = sync.NewCond(&c.mu)
	go func() { <-ctx.Done(); c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() }()
	return &mcp.IOTransport{
		Reader: &drainReader{c: c, r: bufio.NewReader(in)},
		Writer: &drainWriter{c: c, w: out},
	}
}

// drainCounter counts requests read and responses written. mu guards the
// counts; cond is signalled when responses grow or ctx ends.
type drainCounter struct {
	ctx                 context.Context
	mu                  sync.Mutex
	cond                *sync.Cond
	requests, responses int
}

func (c *drainCounter) add(requests, responses int) {
	c.mu.Lock()
	c.requests += requests
	c.responses += responses
	c.cond.Broadcast()
	c.mu.Unlock()
}

// wait blocks until every request read has its response, or ctx ends.
func (c *drainCounter) wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.responses < c.requests && c.ctx.Err() == nil {
		c.cond.Wait()
	}
}

// drainReader passes in through line by line, counting requests.
type drainReader struct {
	c   *drainCounter
	r   *bufio.Reader
	buf []byte
}

func (d *drainReader) Read(p []byte) (int, error) {
	if len(d.buf) == 0 {
		line, err := d.r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				d.c.wait()
			}
			return 0, err
		}
		d.c.add(countMessages(line, true), 0)
		d.buf = line
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

func (d *drainReader) Close() error { return nil }

// drainWriter passes out through, counting the responses in complete lines.
type drainWriter struct {
	c       *drainCounter
	w       io.Writer
	mu      sync.Mutex
	partial []byte
}

func (d *drainWriter) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	d.mu.Lock()
	d.partial = append(d.partial, p[:n]...)
	responses := 0
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		responses += countMessages(d.partial[:i], false)
		d.partial = d.partial[i+1:]
	}
	d.mu.Unlock()
	d.c.add(0, responses)
	return n, err
}

func (d *drainWriter) Close() error { return nil }

// countMessages counts the JSON-RPC requests (id and method) in a line, or
// with requests false the responses (id, no method); a line may be a batch.
func countMessages(line []byte, requests bool) int {
	line = bytes.TrimSpace(line)
	var msgs []map[string]json.RawMessage
	if len(line) > 0 && line[0] == '[' {
		_ = json.Unmarshal(line, &msgs)
	} else {
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) == nil {
			msgs = append(msgs, m)
		}
	}
	n := 0
	for _, m := range msgs {
		_, hasID := m["id"]
		_, hasMethod := m["method"]
		if hasID && hasMethod == requests {
			n++
		}
	}
	return n
}
