// Package audit is an append-only, hash-chained audit log. Each record is one
// JSON line carrying the SHA-256 of the previous record's line, so any edit,
// deletion, reordering or gap breaks the chain and Verify reports where.
//
// Durability: every record is written with one write(2) on an O_APPEND file
// before Append returns, so it survives a crash of the daemon; the file is
// fsync'd at most syncEvery after a write (a machine crash loses at most that
// window). Fields are JSON-encoded, so sandbox-controlled strings (argv,
// paths, output) can never forge a record or break a line.
package audit

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// FileName is the log's name under the data dir.
const FileName = "audit.log"

const syncEvery = 200 * time.Millisecond

// Record is one audit entry.
type Record struct {
	Seq     uint64            `json:"seq"`
	Time    time.Time         `json:"time"`
	Kind    string            `json:"kind"` // api, sandbox, process, file, traffic
	Sandbox string            `json:"sandbox,omitempty"`
	Actor   string            `json:"actor,omitempty"` // API key id, never the key
	Fields  map[string]string `json:"fields,omitempty"`
	Prev    string            `json:"prev"`
	Hash    string            `json:"hash"`
}

// Log appends records. It is safe for concurrent use; mu guards every field.
type Log struct {
	mu     sync.Mutex
	f      appendFile
	size   int64 // bytes of whole records in f
	seq    uint64
	last   string
	dirty  bool
	timer  *time.Timer
	closed bool

	path    string
	genesis string // hash of record 1
	anchor  *Anchor
	hooks   Hooks
	cpMu    sync.Mutex // serialises checkpoints (taken before mu)
	cpSeq   uint64     // seq of the last checkpoint written
	cpDone  bool       // a checkpoint was written this run
}

// Hooks observe appends; both are called under the log's lock and must not
// block (a sink queues, a metric observes).
type Hooks struct {
	Line    func(line []byte)                     // each record as written (with its newline)
	Latency func(took time.Duration, failed bool) // each append's write time
}

// Open opens (creating) the log at path and resumes its chain. A log whose
// chain does not verify is refused rather than extended.
func Open(path string) (*Log, error) {
	seq, last, genesis, err := scanChain(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &Log{f: f, size: st.Size(), seq: seq, last: last, path: path, genesis: genesis}, nil
}

// appendFile is what Log needs of its file (an *os.File opened O_APPEND).
type appendFile interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Append writes one record. Errors are returned but callers usually log them:
// the audit log must not take the service down.
func (l *Log) Append(kind, sandbox, actor string, fields map[string]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("audit log closed")
	}
	t0 := time.Now()
	r := Record{Seq: l.seq + 1, Time: t0.UTC(), Kind: kind, Sandbox: sandbox, Actor: actor, Fields: fields, Prev: l.last}
	line, hash, err := seal(&r)
	if err != nil {
		return err
	}
	_, err = l.f.Write(line)
	if l.hooks.Latency != nil {
		l.hooks.Latency(time.Since(t0), err != nil)
	}
	if err != nil {
		// A short write (disk full) must not leave half a record: the next
		// append would glue onto it and break the chain for good.
		if terr := l.f.Truncate(l.size); terr != nil {
			err = errors.Join(err, fmt.Errorf("drop partial record: %w", terr))
		}
		return fmt.Errorf("write audit record: %w", err)
	}
	l.size += int64(len(line))
	l.seq, l.last = r.Seq, hash
	if r.Seq == 1 {
		l.genesis = hash
	}
	if l.hooks.Line != nil {
		l.hooks.Line(line)
	}
	l.scheduleSyncLocked()
	return nil
}

// seal computes r.Hash over the record without its hash and returns the line.
func seal(r *Record) ([]byte, string, error) {
	r.Hash = ""
	body, err := json.Marshal(r)
	if err != nil {
		return nil, "", fmt.Errorf("encode audit record: %w", err)
	}
	sum := sha256.Sum256(body)
	r.Hash = hex.EncodeToString(sum[:])
	line, err := json.Marshal(r)
	return append(line, '\n'), r.Hash, err
}

func (l *Log) scheduleSyncLocked() {
	if l.dirty {
		return
	}
	l.dirty = true
	l.timer = time.AfterFunc(syncEvery, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.closed {
			_ = l.f.Sync()
		}
		l.dirty = false
	})
}

// Close writes a last checkpoint (when anchored), syncs and closes the log.
func (l *Log) Close() error {
	cerr := l.checkpoint(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	err := l.f.Sync()
	return errors.Join(cerr, err, l.f.Close())
}

// scanChain verifies the file and returns its last seq and hash and the
// hash of its first record.
func scanChain(path string) (seq uint64, last, genesis string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", "", err
	}
	defer f.Close()
	h, err := scanHeads(f, nil)
	return h.Records, h.Hash, h.Genesis, err
}

// Read verifies the chain from r and calls fn for each record in order. It
// stops at the first broken link with an error naming the line.
func Read(r io.Reader, fn func(Record) error) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	var prev string
	var seq uint64
	for line := 1; s.Scan(); line++ {
		var rec Record
		if err := json.Unmarshal(s.Bytes(), &rec); err != nil {
			return fmt.Errorf("audit log line %d: not a record: %w", line, err)
		}
		want := rec.Hash
		if _, got, err := seal(&rec); err != nil || got != want {
			return fmt.Errorf("audit log line %d (seq %d): hash mismatch: record was edited", line, rec.Seq)
		}
		if rec.Prev != prev || rec.Seq != seq+1 {
			return fmt.Errorf("audit log line %d (seq %d): chain broken: a record before it was removed, reordered or edited", line, rec.Seq)
		}
		prev, seq = rec.Hash, rec.Seq
		if err := fn(rec); err != nil {
			return err
		}
	}
	return s.Err()
}
