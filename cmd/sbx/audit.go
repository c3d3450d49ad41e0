package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/sbx-dev/sbx/internal/audit"
)

// auditCmd is `sbx audit [verify] [--data-dir DIR] [--sandbox ID]`. It
// reads the log file directly (root on the daemon's host), so it works
// while the daemon is down.
type auditCmd struct {
	Verify     auditAction `arg:"" optional:"" name:"verify" help:"verify: check the hash chain and its signed checkpoints instead of printing"`
	DataDir    string      `default:"/var/lib/sbx" help:"the daemon's data directory"`
	AnchorDir  string      `default:"/etc/sbx/audit" help:"the daemon's --audit-anchor-dir (signing key and checkpoints)"`
	Unanchored bool        `help:"verify the chain alone, without checkpoints (a log cut short still verifies)"`
	Sandbox    string      `help:"only records of this sandbox"`
	Limit      int         `help:"only the newest N records (0 = all)"`
}

// auditAction is audit's optional argument: "verify" or nothing (kong's
// enum would name the empty value in its error).
type auditAction string

// Decode accepts verify.
func (a *auditAction) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("verify", &s); err != nil {
		return err
	}
	if s != "verify" {
		return fmt.Errorf("the only action is verify, not %q", s)
	}
	*a = auditAction(s)
	return nil
}

// Help is the long help of sbx audit.
func (*auditCmd) Help() string {
	return "Prints the audit records (JSON lines), or with verify checks the hash chain (through\n" +
		"the rotated segments audit.log.<seq> and the active audit.log) and the signed\n" +
		"checkpoints of its head, and exits non-zero on any edit, gap, deleted segment,\n" +
		"reordering, truncation, rollback or replacement, saying which. Segments deleted\n" +
		"by rotation (--audit-keep) are reported as the chain's new start, not as a failure."
}

func (a *auditCmd) run(e *env) int {
	if a.Verify != "" {
		return a.verify(e)
	}
	recs, err := audit.ForSandbox(filepath.Join(a.DataDir, audit.FileName), a.Sandbox, a.Limit)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	enc := json.NewEncoder(e.std.out)
	for _, r := range recs {
		_ = enc.Encode(r)
	}
	return 0
}

func (a *auditCmd) verify(e *env) int {
	h, err := audit.VerifyDir(a.DataDir, a.AnchorDir, a.Unanchored)
	var ve *audit.VerifyError
	if errors.As(err, &ve) {
		fmt.Fprintf(e.std.out, "audit log %s: %s\n", strings.ToUpper(ve.Kind), ve.Msg)
		return 1
	}
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	msg := fmt.Sprintf("audit log OK: %d records verified", h.Kept())
	if h.First > 1 {
		msg += fmt.Sprintf(" (seq %d to %d in %d rotated segments and the active file; the %d before were rotated away", h.First, h.Records, h.Segments, h.First-1)
		if h.RotatedAway > 0 {
			msg += fmt.Sprintf(", with the %d checkpoints that anchored them", h.RotatedAway)
		}
		msg += ")"
	} else if h.Segments > 0 {
		msg += fmt.Sprintf(" (in %d rotated segments and the active file)", h.Segments)
	}
	if h.Anchored != nil {
		msg += fmt.Sprintf("; head anchored by the signed checkpoint of %s (seq %d)", h.Anchored.Time.UTC().Format("2006-01-02T15:04:05Z"), h.Anchored.Seq)
	} else if a.Unanchored {
		msg += " (chain only: not checked against checkpoints)"
	}
	fmt.Fprintln(e.std.out, msg)
	return 0
}
