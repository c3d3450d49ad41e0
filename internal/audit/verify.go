package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Verdicts of a failed verification (VerifyError.Kind).
const (
	Edited     = "edited"      // a record was changed, removed or reordered inside the log
	Truncated  = "truncated"   // the newest records were removed
	RolledBack = "rolled back" // an older copy of the whole log was restored (and maybe extended)
	Replaced   = "replaced"    // the log is not the anchored one
)

// VerifyError says how a log failed verification.
type VerifyError struct {
	Kind string
	Msg  string
}

func (e *VerifyError) Error() string { return "audit log " + e.Kind + ": " + e.Msg }

// Head is what a verified log holds.
type Head struct {
	Records uint64 // records in the log (its last seq)
	Hash    string // hash of the last record
	Genesis string // hash of record 1
	// Anchored is the newest checkpoint the log matches (nil: none given).
	Anchored *Checkpoint
}

// scanHeads verifies r's chain and returns its head plus the hashes at the
// sequence numbers in want.
func scanHeads(r io.Reader, want map[uint64]string) (Head, error) {
	var h Head
	err := Read(r, func(rec Record) error {
		if rec.Seq == 1 {
			h.Genesis = rec.Hash
		}
		if _, ok := want[rec.Seq]; ok {
			want[rec.Seq] = rec.Hash
		}
		h.Records, h.Hash = rec.Seq, rec.Hash
		return nil
	})
	if err != nil {
		return h, &VerifyError{Kind: Edited, Msg: err.Error()}
	}
	return h, nil
}

// VerifyAnchored verifies the log at path against its checkpoints (in file
// order). The chain must verify, the log must start with the anchored first
// record, hold every checkpointed head unchanged and reach the newest one.
// A failure is a *VerifyError naming the case.
func VerifyAnchored(path string, cps []Checkpoint) (Head, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.Open(os.DevNull) // a removed log is an empty one
	}
	if err != nil {
		return Head{}, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	want := map[uint64]string{}
	for _, c := range cps {
		want[c.Seq] = ""
	}
	h, err := scanHeads(f, want)
	if err != nil {
		return h, err
	}
	return h, matchCheckpoints(&h, cps, want)
}

// matchCheckpoints compares the log's head h (and its hashes at the
// checkpointed seqs, got) with the checkpoints.
func matchCheckpoints(h *Head, cps []Checkpoint, got map[uint64]string) error {
	if len(cps) == 0 {
		return nil
	}
	newest := cps[len(cps)-1]
	if h.Records == 0 && newest.Seq > 0 {
		return &VerifyError{Kind: Truncated, Msg: fmt.Sprintf("it is empty or gone but the checkpoint of %s anchors seq %d: every record was removed", stamp(newest), newest.Seq)}
	}
	if newest.Genesis != "" && h.Genesis != newest.Genesis {
		return &VerifyError{Kind: Replaced, Msg: fmt.Sprintf("its first record is not the anchored one (checkpoint of %s, seq %d): the whole log was replaced", stamp(newest), newest.Seq)}
	}
	var matched, stopAtEnd *Checkpoint
	for i := range cps {
		c := &cps[i]
		if c.Seq > h.Records || c.Seq == 0 {
			continue
		}
		if got[c.Seq] != c.Hash {
			return diverged(matched, c)
		}
		matched = c
		if c.Final && c.Seq == h.Records {
			stopAtEnd = c
		}
	}
	h.Anchored = matched
	if newest.Seq <= h.Records {
		h.Anchored = &newest
		return nil
	}
	missing := newest.Seq - h.Records
	if stopAtEnd != nil {
		return &VerifyError{Kind: RolledBack, Msg: fmt.Sprintf("it ends exactly where the daemon stopped at %s (seq %d) but the checkpoint of %s anchors seq %d: a copy of the log from that stop was restored (or everything after it was cut); %d records missing", stamp(*stopAtEnd), stopAtEnd.Seq, stamp(newest), newest.Seq, missing)}
	}
	return &VerifyError{Kind: Truncated, Msg: fmt.Sprintf("it ends at seq %d but the checkpoint of %s anchors seq %d: the newest %d records were removed (cut off, or an older copy restored)", h.Records, stamp(newest), newest.Seq, missing)}
}

// diverged reports a log whose record at a checkpointed seq differs.
func diverged(matched, c *Checkpoint) error {
	if matched == nil {
		return &VerifyError{Kind: Replaced, Msg: fmt.Sprintf("record %d is not the one anchored by the checkpoint of %s: the log was rewritten or replaced", c.Seq, stamp(*c))}
	}
	return &VerifyError{Kind: RolledBack, Msg: fmt.Sprintf("it matches the checkpoint of %s (seq %d) but record %d differs from the checkpoint of %s: an older copy was restored and then extended", stamp(*matched), matched.Seq, c.Seq, stamp(*c))}
}

func stamp(c Checkpoint) string { return c.Time.UTC().Format("2006-01-02T15:04:05Z") }
