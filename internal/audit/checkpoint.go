package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// SetHooks installs observers of appends (before the first Append).
func (l *Log) SetHooks(h Hooks) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hooks = h
}

// SetAnchor checks the log (every kept segment) against a's checkpoints and, when it matches,
// anchors it: a checkpoint of the current head is written now, then by
// Checkpoint (RunCheckpoints) and at Close. A log that does not match its
// checkpoints (truncated, rolled back, replaced) is refused with a
// *VerifyError: extending it would bury the evidence. Call it before the
// first Append.
func (l *Log) SetAnchor(a *Anchor) error {
	cps, err := ReadCheckpoints(a.Path(), a.Public())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	h, err := VerifyAnchored(l.path, cps)
	if err != nil {
		return fmt.Errorf("%w (checkpoints: %s; move that file aside to accept this log as it is)", err, a.Path())
	}
	a.mu.Lock()
	a.lines = len(cps)
	a.mu.Unlock()
	l.mu.Lock()
	l.anchor = a
	if l.genesis == "" && h.Genesis != "" {
		l.genesis = h.Genesis
	} else if l.genesis == "" && len(cps) > 0 {
		l.genesis = cps[len(cps)-1].Genesis // record 1 was rotated away
	}
	l.mu.Unlock()
	return l.Checkpoint()
}

// Checkpoint syncs the log and signs its head into the anchor's file, unless
// nothing was appended since the last one. Only synced records are anchored,
// so a machine crash cannot leave a checkpoint ahead of the log.
func (l *Log) Checkpoint() error { return l.checkpoint(false) }

// checkpoint writes a checkpoint; a final one (at Close) is written even if
// the head did not move, marking where the daemon stopped.
func (l *Log) checkpoint(final bool) error {
	l.cpMu.Lock()
	defer l.cpMu.Unlock()
	l.mu.Lock()
	if l.anchor == nil || l.closed || (!final && l.cpDone && l.cpSeq == l.seq && l.cpFirst == l.first) {
		l.mu.Unlock()
		return nil
	}
	err := l.f.Sync()
	c := Checkpoint{Seq: l.seq, Hash: l.last, Genesis: l.genesis, Time: time.Now().UTC(), Final: final}
	first := l.first
	if first > 1 { // omitted until the first prune: such checkpoints read as before rotation
		c.First = first
	}
	a := l.anchor
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("audit checkpoint: sync log: %w", err)
	}
	if err := a.write(c); err != nil {
		return err
	}
	l.cpSeq, l.cpFirst, l.cpDone = c.Seq, first, true
	return a.compactIfDue()
}

// RunCheckpoints writes a checkpoint every interval until ctx ends; errors
// go to onErr.
func (l *Log) RunCheckpoints(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Checkpoint(); err != nil && onErr != nil {
				onErr(err)
			}
		}
	}
}
