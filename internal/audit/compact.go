package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The checkpoint file gets a line per checkpoint (one per
// --audit-checkpoint-every in which the log moved: 8640 a day at 10 s), and
// every start and audit view verifies each line's signature. So that this
// stays bounded, the file is compacted once it holds compactAt lines:
// the newest keepRecent checkpoints stay, and of the older ones those that
// still anchor kept records (seq at or past the newest checkpoint's First)
// and are either the last of their hour or written as the daemon stopped
// (Final). Detection needs only the newest checkpoint (a log cut short,
// rolled back or replaced fails against it, VerifyAnchored); the older
// ones date what a failure names. Lines are kept byte for byte (their
// signatures stay the ones written).
var (
	keepRecent = 8640
	compactAt  = 2 * keepRecent
)

// thin returns which of cps (in file order) a compaction keeps.
func thin(cps []Checkpoint) []bool {
	keep := make([]bool, len(cps))
	if len(cps) == 0 {
		return keep
	}
	from := max(cps[len(cps)-1].First, 1)
	recent := max(len(cps)-keepRecent, 0)
	for i, c := range cps {
		switch {
		case i >= recent:
			keep[i] = true
		case c.Seq < from:
			// anchors records rotated away: counted by verify, never checked
		case c.Final:
			keep[i] = true
		default:
			next := cps[i+1].Time.UTC().Truncate(time.Hour)
			keep[i] = !c.Time.UTC().Truncate(time.Hour).Equal(next) // the last of its hour
		}
	}
	return keep
}

// compactLocked rewrites the checkpoint file with the lines thin keeps
// (a.mu held). The new file replaces the old one by rename after an
// fsync, so a crash leaves one or the other whole; a stray temporary file
// is overwritten by the next compaction.
func (a *Anchor) compactLocked() error {
	b, err := os.ReadFile(a.path)
	if err != nil {
		return fmt.Errorf("audit checkpoints: compact: %w", err)
	}
	lines, cps, err := parseCheckpoints(b)
	if err != nil {
		return fmt.Errorf("audit checkpoints: compact: %w", err)
	}
	var out bytes.Buffer
	n := 0
	for i, k := range thin(cps) {
		if k {
			out.Write(lines[i])
			out.WriteByte('\n')
			n++
		}
	}
	if err := replaceFile(a.path, out.Bytes()); err != nil {
		return fmt.Errorf("audit checkpoints: compact: %w", err)
	}
	a.lines = n
	return nil
}

// replaceFile writes b to a temporary file beside path, syncs it and
// renames it over path, then syncs the directory.
func replaceFile(path string, b []byte) error {
	tmp := path + ".compact"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
