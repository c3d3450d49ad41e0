package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/audit"
)

// runAudit implements `sbx audit [verify] [--data-dir DIR] [--sandbox ID]`.
// It reads the log file directly (root on the daemon's host), so it works
// while the daemon is down.
func runAudit(_ context.Context, args []string) int {
	verify := len(args) > 0 && args[0] == "verify"
	if verify {
		args = args[1:]
	}
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sbx audit [verify] [--data-dir DIR] [--sandbox ID] [--limit N]\n\n"+
			"Prints the audit records (JSON lines), or with verify checks the hash chain and\nexits non-zero on any edit, gap or reordering.\n\nflags:")
		fs.PrintDefaults()
	}
	dataDir := fs.String("data-dir", "/var/lib/sbx", "the daemon's data directory")
	id := fs.String("sandbox", "", "only records of this sandbox")
	limit := fs.Int("limit", 0, "only the newest N records (0 = all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	recs, err := audit.ForSandbox(filepath.Join(*dataDir, audit.FileName), *id, *limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbx audit:", err)
		return 1
	}
	if verify {
		fmt.Printf("audit log OK: %d records verified\n", len(recs))
		return 0
	}
	enc := json.NewEncoder(os.Stdout)
	for _, r := range recs {
		_ = enc.Encode(r)
	}
	return 0
}
