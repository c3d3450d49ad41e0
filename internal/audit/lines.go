package audit

import (
	"bufio"
	"io"
	"runtime"
	"sync"
)

// Decoding a record (its JSON) is most of what verifying a log costs, and
// each line decodes alone: decodeLines cuts the input into batches of
// whole lines, decodes the batches on every core and hands the lines back
// in order. Checking the chain, which links each line to the one before,
// stays sequential in the caller.

const (
	batchBytes  = 1 << 20  // a batch is the lines of about this many bytes
	maxLineSize = 16 << 20 // a longer line is an error (bufio.ErrTooLong)
	maxWorkers  = 8        // with 3 batches in flight each: ≈ 24 MiB at most
)

// decoded is one line as decode read it.
type decoded struct {
	rec Record
	ok  bool // the line carries the hash of its body
	err error
}

// batch is a run of consecutive lines; done is closed once out holds all
// of them decoded.
type batch[T any] struct {
	lines [][]byte
	out   []T
	done  chan struct{}
}

// decodeLines calls each for every line of r in order, decoded by
// decode(line, full) on every core; see scanLines.
func decodeLines(r io.Reader, full bool, each func(decoded) bool) error {
	return scanLines(r, func(l []byte) decoded {
		rec, ok, err := decode(l, full)
		return decoded{rec, ok, err}
	}, each)
}

// scanLines calls each for every line of r in order (lines split as
// bufio.ScanLines splits them), as conv returns it; conv runs on up to
// min(GOMAXPROCS, maxWorkers) goroutines and must not keep the line. each returning false
// stops it; the error is r's (or bufio.ErrTooLong for a line over
// maxLineSize).
func scanLines[T any](r io.Reader, conv func([]byte) T, each func(T) bool) error {
	workers := min(runtime.GOMAXPROCS(0), maxWorkers)
	order := make(chan *batch[T], 2*workers) // batches in input order, bounds memory
	work := make(chan *batch[T], 2*workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				for i, l := range b.lines {
					b.out[i] = conv(l)
				}
				close(b.done)
			}
		}()
	}
	var readErr error
	go func() {
		readErr = splitBatches(r, stop, func(b *batch[T]) { work <- b; order <- b })
		close(work)
		close(order)
	}()
	defer wg.Wait()
	for b := range order {
		<-b.done
		for _, d := range b.out {
			if !each(d) {
				close(stop)
				for range order { // let the splitter finish
				}
				return nil
			}
		}
	}
	return readErr
}

// splitBatches reads r into batches of whole lines and sends each, until
// r ends, fails or stop is closed.
func splitBatches[T any](r io.Reader, stop <-chan struct{}, send func(*batch[T])) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), maxLineSize)
	for {
		b := &batch[T]{done: make(chan struct{})}
		buf := make([]byte, 0, batchBytes+4<<10)
		for len(buf) < batchBytes && s.Scan() {
			start := len(buf)
			buf = append(buf, s.Bytes()...) // a longer line moves buf; earlier lines keep the old array
			b.lines = append(b.lines, buf[start:len(buf):len(buf)])
		}
		if len(b.lines) > 0 {
			b.out = make([]T, len(b.lines))
			select {
			case <-stop:
				return nil
			default:
				send(b)
			}
		}
		if len(buf) < batchBytes {
			return s.Err()
		}
	}
}
