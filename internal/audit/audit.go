// Package audit is an append-only, hash-chained audit log. Each record is one
// JSON line carrying the SHA-256 of the previous record's line, so any edit,
// deletion, reordering or gap breaks the chain and Verify reports where.
//
// Durability: every record is written with one write(2) on an O_APPEND file
// before Append returns, so it survives a crash of the daemon; the file is
// fsync'd at most syncEvery after a write (a machine crash loses at most that
// window). Fields are JSON-encoded, so sandbox-controlled strings (argv,
// paths, output) can never forge a record or break a line.
//
// Rotation (SetRotation): the log is audit.log plus its rotated segments
// audit.log.<first seq>, one chain through them (segment.go); the oldest
// are deleted only after a signed checkpoint records the chain's new start
// (prune.go), and a rotation a crash cut short is resumed (rotate.go).
package audit

import (
	"bytes"
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

// Log appends records. It is safe for concurrent use; mu guards every field
// but those marked otherwise.
type Log struct {
	mu       sync.Mutex
	f        appendFile
	size     int64 // bytes of whole records in f
	seq      uint64
	last     string
	dirty    bool
	timer    *time.Timer
	closed   bool
	segFirst uint64 // seq of the active file's first record (next one's when empty)
	first    uint64 // oldest seq kept (checkpoints sign it: Checkpoint.First)

	path    string
	genesis string // hash of record 1 ("" when rotated away and not anchored)
	anchor  *Anchor
	hooks   Hooks
	rot     rotation
	cpMu    sync.Mutex // serialises checkpoints (taken before mu)
	cpSeq   uint64     // seq of the last checkpoint written (cpMu)
	cpFirst uint64     // its First (cpMu)
	cpDone  bool       // a checkpoint was written this run (cpMu)
}

// Hooks observe appends; both are called under the log's lock and must not
// block (a sink queues, a metric observes).
type Hooks struct {
	Line    func(line []byte)                     // each record as written (with its newline)
	Latency func(took time.Duration, failed bool) // each append's write time
	// Error gets failures of rotation and pruning (the record itself was
	// written; rotation is retried later).
	Error func(err error)
}

// Open opens (creating) the log at path and resumes its chain where it
// stands: the active file and its newest rotated segment must verify and
// join (Verify and SetAnchor check the older segments). A rotation a crash
// cut short is finished or undone first. A log whose chain does not verify
// is refused rather than extended.
func Open(path string) (*Log, error) {
	if err := recoverRotation(path); err != nil {
		return nil, err
	}
	r, err := resume(path)
	if err != nil {
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
	return &Log{f: f, size: st.Size(), seq: r.head.seq, last: r.head.hash, path: path, genesis: r.genesis,
		first: r.first, segFirst: r.segFirst}, nil
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
	l.maybeRotateLocked()
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

// decode reads one line (the whole record if full, else its Seq, Prev and
// Hash) and reports whether it carries the hash of its line. A line as seal
// writes it is the hashed body with the hash filled in, so the body is
// hashed from the line's bytes (one SHA-256, no re-encoding); any other
// line is decoded whole and re-encoded as seal does.
func decode(line []byte, full bool) (Record, bool, error) {
	var rec Record
	if full {
		if err := json.Unmarshal(line, &rec); err != nil {
			return rec, false, err
		}
	} else {
		var h struct {
			Seq        uint64
			Prev, Hash string
		}
		if err := json.Unmarshal(line, &h); err != nil {
			return rec, false, err
		}
		rec = Record{Seq: h.Seq, Prev: h.Prev, Hash: h.Hash}
	}
	want := rec.Hash
	if n := len(line) - len(want) - 2; len(want) == sha256.Size*2 && n > 0 &&
		bytes.HasSuffix(line[:n], []byte(`"hash":"`)) && string(line[n:]) == want+`"}` {
		h := sha256.New()
		h.Write(line[:n])
		h.Write([]byte(`"}`))
		var sum [sha256.Size]byte
		return rec, hex.EncodeToString(h.Sum(sum[:0])) == want, nil
	}
	var whole Record
	if err := json.Unmarshal(line, &whole); err != nil {
		return rec, false, err
	}
	_, got, err := seal(&whole)
	return rec, err == nil && got == want, nil
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

// Close waits for a prune in progress, writes a last checkpoint (when
// anchored), syncs and closes the log.
func (l *Log) Close() error {
	l.stopPruner()
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

// Read verifies the chain from r, a whole log that starts at record 1, and
// calls fn for each record in order. It stops at the first broken link with
// an error naming the line.
func Read(r io.Reader, fn func(Record) error) error {
	sp, err := readFrom(r, "audit log", true, fn)
	if err == nil && sp.n > 0 && sp.start != (link{}) {
		err = fmt.Errorf("audit log line 1 (seq %d): chain broken: the records before it were removed", sp.start.seq+1)
	}
	return err
}

// readFrom verifies the records of r, named name in errors, each sealed and
// following the one before; the first may follow any link (returned as the
// span's start, for the caller to check). fn gets whole records if full,
// else only their Seq, Prev and Hash (verifying alone decodes no more).
func readFrom(r io.Reader, name string, full bool, fn func(Record) error) (span, error) {
	var sp span
	var err error
	line := 0
	rerr := decodeLines(r, full, func(d decoded) bool {
		line++
		err = sp.next(d, name, line)
		if err == nil {
			err = fn(d.rec)
		}
		return err == nil
	})
	if err != nil {
		return sp, err
	}
	return sp, rerr
}

// next checks that the record d, line number line of the file named name,
// is sealed and follows the span's end, and extends the span by it.
func (sp *span) next(d decoded, name string, line int) error {
	rec := d.rec
	if d.err != nil {
		return fmt.Errorf("%s line %d: not a record: %w", name, line, d.err)
	}
	if !d.ok {
		return fmt.Errorf("%s line %d (seq %d): hash mismatch: record was edited", name, line, rec.Seq)
	}
	if line == 1 {
		if rec.Seq == 0 || (rec.Seq == 1) != (rec.Prev == "") {
			return fmt.Errorf("%s line 1 (seq %d): not a chain's record", name, rec.Seq)
		}
		sp.start = link{seq: rec.Seq - 1, hash: rec.Prev}
		sp.end = sp.start
	}
	if rec.Prev != sp.end.hash || rec.Seq != sp.end.seq+1 {
		return fmt.Errorf("%s line %d (seq %d): chain broken: a record before it was removed, reordered or edited", name, line, rec.Seq)
	}
	sp.end, sp.n = link{seq: rec.Seq, hash: rec.Hash}, sp.n+1
	return nil
}
