package audit

import (
	"fmt"
	"path/filepath"
)

// Verdicts of a failed verification (VerifyError.Kind).
const (
	Edited     = "edited"      // a record was changed, removed or reordered inside the log
	Truncated  = "truncated"   // the newest records were removed, or old ones past what rotation deleted
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
	Genesis string // hash of record 1 ("" once rotated away)
	// First is the seq of the oldest record kept (1 unless older segments
	// were rotated away; 0 for an empty log), Segments the rotated segments
	// holding records.
	First    uint64
	Segments int
	// RotatedAway counts the checkpoints that anchor records older than
	// First: they were not checked, their segments being gone.
	RotatedAway int
	// Anchored is the newest checkpoint the log matches (nil: none given).
	Anchored *Checkpoint
}

// Kept is how many records the log keeps (verified).
func (h Head) Kept() uint64 {
	if h.First == 0 {
		return 0
	}
	return h.Records - h.First + 1
}

// scanLog verifies the chain through the log's files (its kept segments,
// then the active file at path) and returns its head plus the hashes at the
// seqs in want. A missing or empty log is an empty chain.
func scanLog(active string, want map[uint64]string) (Head, error) {
	files, err := chainFiles(active)
	if err != nil {
		return Head{}, err
	}
	var h Head
	var prev link
	prevName := ""
	for _, seg := range files {
		sp, err := readSegment(seg, false, func(rec Record) error {
			if rec.Seq == 1 {
				h.Genesis = rec.Hash
			}
			if _, ok := want[rec.Seq]; ok {
				want[rec.Seq] = rec.Hash
			}
			return nil
		})
		name := filepath.Base(seg.path)
		if err == nil {
			err = h.extend(prev, prevName, name, seg, sp)
		}
		if err != nil {
			return h, &VerifyError{Kind: Edited, Msg: err.Error()}
		}
		if sp.n > 0 {
			prev, prevName = sp.end, name
		}
	}
	return h, nil
}

// extend adds the span sp of one file (named name) to h: the oldest file
// holding records sets where the kept chain starts (past seq 1 only for a
// rotated segment); each later one must continue it.
func (h *Head) extend(prev link, prevName, name string, seg segment, sp span) error {
	if sp.n == 0 {
		return nil
	}
	if h.First == 0 {
		if seg.first == 0 && sp.start != (link{}) {
			return fmt.Errorf("%s starts at seq %d and no rotated segment holds the records before it: they were removed", name, sp.start.seq+1)
		}
		h.First = sp.start.seq + 1
	} else if err := joins(prev, prevName, name, sp); err != nil {
		return err
	}
	if seg.first != 0 {
		h.Segments++
	}
	h.Records, h.Hash = sp.end.seq, sp.end.hash
	return nil
}

// VerifyAnchored verifies the log at path (with its rotated segments)
// against its checkpoints (in file order). The chain must verify through
// every kept file, the log must keep every record from the newest
// checkpoint's First on (and start with the anchored record 1 while it
// keeps it), hold every checkpointed head it keeps unchanged and reach the
// newest one. Checkpoints of records rotated away are counted
// (Head.RotatedAway), not checked. A failure is a *VerifyError naming the
// case.
func VerifyAnchored(path string, cps []Checkpoint) (Head, error) {
	want := map[uint64]string{}
	for _, c := range cps {
		want[c.Seq] = ""
	}
	h, err := scanLog(path, want)
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
	if err := checkStart(h, newest); err != nil {
		return err
	}
	var matched, stopAtEnd *Checkpoint
	for i := range cps {
		c := &cps[i]
		if c.Seq > 0 && c.Seq < h.First {
			h.RotatedAway++
		}
		if c.Seq > h.Records || c.Seq < h.First || c.Seq == 0 {
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

// checkStart compares where the kept chain starts with the newest
// checkpoint: records before its First may have been rotated away (the
// daemon signs the new start before deleting a segment), later ones not;
// while record 1 is kept it must be the anchored one.
func checkStart(h *Head, newest Checkpoint) error {
	keepFrom := max(newest.First, 1)
	if h.First > keepFrom {
		return &VerifyError{Kind: Truncated, Msg: fmt.Sprintf("its oldest record is seq %d but the checkpoint of %s keeps every record from seq %d on: records %d to %d were deleted, not rotated away", h.First, stamp(newest), keepFrom, keepFrom, h.First-1)}
	}
	if h.First == 1 && newest.Genesis != "" && h.Genesis != newest.Genesis {
		return &VerifyError{Kind: Replaced, Msg: fmt.Sprintf("its first record is not the anchored one (checkpoint of %s, seq %d): the whole log was replaced", stamp(newest), newest.Seq)}
	}
	return nil
}

// diverged reports a log whose record at a checkpointed seq differs.
func diverged(matched, c *Checkpoint) error {
	if matched == nil {
		return &VerifyError{Kind: Replaced, Msg: fmt.Sprintf("record %d is not the one anchored by the checkpoint of %s: the log was rewritten or replaced", c.Seq, stamp(*c))}
	}
	return &VerifyError{Kind: RolledBack, Msg: fmt.Sprintf("it matches the checkpoint of %s (seq %d) but record %d differs from the checkpoint of %s: an older copy was restored and then extended", stamp(*matched), matched.Seq, c.Seq, stamp(*c))}
}

func stamp(c Checkpoint) string { return c.Time.UTC().Format("2006-01-02T15:04:05Z") }
