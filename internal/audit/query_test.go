package audit

import (
	"os"
	"strings"
	"testing"
)

// TestForSandboxAcrossSegments: a query finds its sandbox's newest records
// across rotated segments, oldest first, bounded; a segment deleted from
// the middle of what it reads is an error, not a silent gap.
func TestForSandboxAcrossSegments(t *testing.T) {
	r := newRotated(t, true)
	r.write(t, 4096, 3, 200, 0) // sbx-a on odd seqs, sbx-b on even
	h, err := r.verify(t)
	must(t, err)
	if h.First < 100 || h.First > 160 {
		t.Fatalf("setup: kept from seq %d", h.First)
	}
	evens := int(h.Records/2 - (h.First-1)/2)
	cases := []struct {
		name      string
		id        string
		limit     int
		wantN     int
		wantFirst uint64 // seq of the first record returned
	}{
		{"one sandbox, bounded", "sbx-a", 20, 20, 161},
		{"one sandbox, all kept", "sbx-b", 0, evens, h.First + h.First%2},
		{"every record, bounded", "", 30, 30, 171},
		{"every record kept", "", 0, int(h.Kept()), h.First},
		{"no such sandbox", "sbx-c", 5, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ForSandbox(r.path, tc.id, tc.limit)
			if err != nil || len(recs) != tc.wantN {
				t.Fatalf("%d records, %v; want %d", len(recs), err, tc.wantN)
			}
			for i, rec := range recs {
				if (tc.id != "" && rec.Sandbox != tc.id) || (i > 0 && rec.Seq <= recs[i-1].Seq) {
					t.Fatalf("record %d: %+v", i, rec)
				}
			}
			if tc.wantN > 0 && (recs[0].Seq != tc.wantFirst || recs[len(recs)-1].Seq < 199) {
				t.Fatalf("records %d..%d, want from %d to the newest", recs[0].Seq, recs[len(recs)-1].Seq, tc.wantFirst)
			}
		})
	}
	segs := r.segments(t)
	must(t, os.Remove(segs[1].path))
	if _, err := ForSandbox(r.path, "sbx-a", 0); err == nil || !strings.Contains(err.Error(), "a segment deleted") {
		t.Fatalf("query over a deleted segment: %v", err)
	}
}
