package audit

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/failpoint"
)

// runPruner prunes each time it is kicked, until kick is closed (after a
// last prune if one was due).
func (l *Log) runPruner(kick <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for range kick {
		if err := l.Prune(); err != nil {
			l.mu.Lock()
			l.reportLocked(err)
			l.mu.Unlock()
		}
	}
}

// stopPruner ends the pruner goroutine and waits for it.
func (l *Log) stopPruner() {
	l.mu.Lock()
	kick, done := l.rot.kick, l.rot.done
	l.rot.kick = nil
	l.mu.Unlock()
	if kick != nil {
		close(kick)
		<-done
	}
}

// Prune deletes the oldest rotated segments beyond the keep of
// SetRotation. When the log is anchored it first signs a checkpoint whose
// First is the oldest record kept afterwards, so verification sees the
// deletion as the chain's new start and any other as tampering; if that
// checkpoint fails nothing is deleted. Called by the pruner; safe to call
// at any time (checkpoints serialise it).
func (l *Log) Prune() error {
	l.mu.Lock()
	keep := l.rot.keep
	l.mu.Unlock()
	segs, err := segmentsOf(l.path)
	if err != nil || keep <= 0 || len(segs) <= keep {
		return err
	}
	drop, first := segs[:len(segs)-keep], segs[len(segs)-keep].first
	if err := l.signFirst(first); err != nil {
		return fmt.Errorf("prune audit log: sign its new start (nothing deleted): %w", err)
	}
	if err := failpoint.Hit("audit/prune-signed"); err != nil {
		return err
	}
	var errs []error
	for _, s := range drop {
		errs = append(errs, removeIfThere(s.path))
	}
	errs = append(errs, syncDir(filepath.Dir(l.path)))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prune audit log: %w", err)
	}
	return nil
}

// signFirst raises the log's First to first and, when anchored, makes sure
// a checkpoint with it is written before it returns.
func (l *Log) signFirst(first uint64) error {
	l.mu.Lock()
	l.first = max(l.first, first)
	anchored := l.anchor != nil
	l.mu.Unlock()
	if !anchored {
		return nil
	}
	if err := l.Checkpoint(); err != nil {
		return err
	}
	l.cpMu.Lock()
	defer l.cpMu.Unlock()
	if !l.cpDone || l.cpFirst < first {
		return errors.New("no checkpoint written (the log is closed)")
	}
	return nil
}

// resumed is where Open finds the chain.
type resumed struct {
	head            link   // the last record
	genesis         string // hash of record 1, when read
	first, segFirst uint64 // oldest seq kept; the active file's first
}

// resume verifies the active file and the newest rotated segment holding
// records, which it must continue, and returns where the chain stands.
func resume(path string) (resumed, error) {
	r := resumed{first: 1}
	segs, err := segmentsOf(path)
	if err != nil {
		return r, err
	}
	if len(segs) > 0 {
		r.first = segs[0].first
	}
	note := func(rec Record) error {
		if rec.Seq == 1 {
			r.genesis = rec.Hash
		}
		return nil
	}
	var h Head
	var prev link
	prevName := ""
	for i := len(segs) - 1; i >= 0 && h.First == 0; i-- {
		sp, err := readSegment(segs[i], false, note)
		if err == nil {
			err = h.extend(prev, prevName, filepath.Base(segs[i].path), segs[i], sp)
		}
		if err != nil {
			return r, &VerifyError{Kind: Edited, Msg: err.Error()}
		}
		prev, prevName = sp.end, filepath.Base(segs[i].path)
	}
	sp, err := readSegment(segment{path: path}, false, note)
	if err == nil {
		err = h.extend(prev, prevName, filepath.Base(path), segment{path: path}, sp)
	}
	if err != nil {
		return r, &VerifyError{Kind: Edited, Msg: err.Error()}
	}
	r.head, r.segFirst = link{seq: h.Records, hash: h.Hash}, h.Records+1
	if sp.n > 0 {
		r.segFirst = sp.start.seq + 1
	}
	return r, nil
}
