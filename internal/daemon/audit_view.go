package daemon

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/audit"
)

// auditView is what GET /sbx/audit answers (the dashboard's audit view):
// the verdict of `sbx audit verify` on the daemon's own log and its newest
// records.
type auditView struct {
	Verdict     string         `json:"verdict"` // OK, EDITED, TRUNCATED, ROLLED BACK, REPLACED, or ERROR
	Message     string         `json:"message"`
	Records     uint64         `json:"records"`               // records verified
	First       uint64         `json:"first,omitempty"`       // the oldest seq kept (older ones rotated away)
	AnchoredAt  *time.Time     `json:"anchoredAt,omitempty"`  // the newest signed checkpoint the log matches
	AnchoredSeq uint64         `json:"anchoredSeq,omitempty"` // its sequence number
	Newest      []audit.Record `json:"newest"`                // newest first
}

// Audit implements api.DebugSource: the log is verified as `sbx audit
// verify` does (against the signed checkpoints, unless the daemon runs
// with --audit-anchor-dir none).
func (d debugSource) Audit(n int) (any, error) {
	v := auditView{Verdict: "OK", Newest: []audit.Record{}}
	h, err := audit.VerifyDir(d.f.dataDir, d.f.obs.anchorDir, d.f.obs.anchorDir == "none")
	var ve *audit.VerifyError
	switch {
	case errors.As(err, &ve):
		v.Verdict, v.Message = strings.ToUpper(ve.Kind), ve.Msg
	case err != nil:
		v.Verdict, v.Message = "ERROR", err.Error()
	default:
		v.Records, v.First = h.Kept(), h.First
		if h.Anchored != nil {
			t := h.Anchored.Time.UTC()
			v.AnchoredAt, v.AnchoredSeq = &t, h.Anchored.Seq
		} else {
			v.Message = "chain only: the daemon runs with --audit-anchor-dir none"
		}
	}
	recs, err := audit.ForSandbox(filepath.Join(d.f.dataDir, audit.FileName), "", n)
	if err != nil && v.Verdict == "OK" { // changed since it was verified
		v.Verdict, v.Message = "ERROR", err.Error()
	}
	for i := len(recs) - 1; i >= 0; i-- {
		v.Newest = append(v.Newest, recs[i])
	}
	return v, nil
}
