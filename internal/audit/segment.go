package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A rotated log is a run of files beside the active one (audit.log): its
// earlier segments, each named audit.log.<seq of its first record>, oldest
// first. The chain runs through them unchanged: a segment's first record
// carries the previous segment's last hash (prev) and seq + 1, so a
// segment deleted from the middle breaks the chain at the next one. The
// oldest kept segment may start past seq 1 (its predecessors were rotated
// away); the signed checkpoints say from which seq records must be kept
// (Checkpoint.First).

// segment is one rotated file of the log.
type segment struct {
	path  string
	first uint64 // seq of its first record, from its name
}

// segmentPath names the segment whose first record is seq first.
func segmentPath(active string, first uint64) string {
	return fmt.Sprintf("%s.%012d", active, first)
}

// segmentsOf lists the rotated segments of the active log at path, oldest
// first (none when its directory does not exist).
func segmentsOf(active string) ([]segment, error) {
	dir, prefix := filepath.Dir(active), filepath.Base(active)+"."
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list audit log segments: %w", err)
	}
	var out []segment
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		seq, err := strconv.ParseUint(name[len(prefix):], 10, 64)
		if err != nil || seq == 0 {
			continue // not a segment (audit.log.new of a rotation cut short)
		}
		out = append(out, segment{path: filepath.Join(dir, name), first: seq})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

// chainFiles is the log's files in chain order: its segments, then the
// active file (which may not exist: an empty log). A newest segment that is
// still a second name of the active file (a rotation a crash cut short,
// which Open undoes) is the active file, read once.
func chainFiles(active string) ([]segment, error) {
	segs, err := segmentsOf(active)
	if err != nil {
		return nil, err
	}
	if len(segs) > 0 && sameFile(segs[len(segs)-1].path, active) {
		segs = segs[:len(segs)-1]
	}
	return append(segs, segment{path: active}), nil
}

// sameFile reports whether a and b both exist and are one file.
func sameFile(a, b string) bool {
	sa, aerr := os.Stat(a)
	sb, berr := os.Stat(b)
	return aerr == nil && berr == nil && os.SameFile(sa, sb)
}

// link is a point in the chain: a record's seq and hash (seq 0, hash "":
// before record 1).
type link struct {
	seq  uint64
	hash string
}

// span is what one file of the chain holds: the link its first record
// follows, its last record's link, and how many records.
type span struct {
	start, end link
	n          uint64
}

// readSegment verifies one file's records (each sealed, each following the
// one before) and calls fn for each (whole records if full, else their Seq,
// Prev and Hash). Its first record may follow any link (checked by joins);
// a missing file is an empty one.
func readSegment(seg segment, full bool, fn func(Record) error) (span, error) {
	f, err := os.Open(seg.path)
	if errors.Is(err, os.ErrNotExist) {
		return span{}, nil
	}
	if err != nil {
		return span{}, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	sp, err := readFrom(f, filepath.Base(seg.path), full, fn)
	if err == nil && seg.first != 0 && sp.n > 0 && sp.start.seq+1 != seg.first {
		err = fmt.Errorf("%s holds seq %d first, not the seq its name says: it was renamed or edited", filepath.Base(seg.path), sp.start.seq+1)
	}
	return sp, err
}

// joins checks that the file named next (span sp) continues the chain
// where the file before it (prevName) ended at prev.
func joins(prev link, prevName, next string, sp span) error {
	if sp.n == 0 || sp.start == prev {
		return nil
	}
	if sp.start.seq > prev.seq {
		return fmt.Errorf("%s starts at seq %d but %s ends at seq %d: records %d to %d were removed (a segment deleted)", next, sp.start.seq+1, prevName, prev.seq, prev.seq+1, sp.start.seq)
	}
	return fmt.Errorf("%s starts at seq %d, which does not follow seq %d, the end of %s: records were removed, reordered or edited", next, sp.start.seq+1, prev.seq, prevName)
}
