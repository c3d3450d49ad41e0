package oci

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// shareHostFairly adjusts the host-wide and host-root bounds that
// user-namespace sandboxes (crun, runc) are counted in with host root and
// each other: the inotify bounds (inotify.go), the AIO events (aio.go), the
// PTYs (pty.go), the open files (filemax.go) and the runtime's inherited
// share of queued signals and message queues (rlimits.go). A failure is logged, not fatal: the daemon may run where
// /proc/sys is read-only (docs/SECURITY.md names the cost).
func shareHostFairly(log *slog.Logger) {
	if err := raiseHostInotify(); err != nil {
		log.Warn("cannot raise the host's inotify bounds: crun/runc sandboxes share host root's (docs/SECURITY.md)", "err", err)
	}
	if err := raiseHostAIO(); err != nil {
		log.Warn("cannot raise the host's AIO bound: one crun/runc sandbox can take it all (docs/SECURITY.md)", "err", err)
	}
	if err := raiseHostPTYs(); err != nil {
		log.Warn("cannot raise the host's PTY bound: crun/runc sandboxes share 3072 PTYs (docs/SECURITY.md)", "err", err)
	}
	if err := raiseHostFileMax(); err != nil {
		log.Warn("cannot raise the host's open-file bound: crun/runc sandboxes may fill it (docs/SECURITY.md)", "err", err)
	}
	if err := halveSharedRlimits(); err != nil {
		log.Warn("cannot lower the runtime's shared rlimits: crun/runc sandboxes may take host root's queued signals (docs/SECURITY.md)", "err", err)
	}
}

// raiseSysctl raises the integer sysctl at path (a /proc/sys file) to floor,
// never lowering it: a value it cannot parse is replaced.
func raiseSysctl(path string, floor uint64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if cur, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && cur >= floor {
		return nil
	}
	if err := os.WriteFile(path, []byte(strconv.FormatUint(floor, 10)), 0); err != nil {
		return fmt.Errorf("raise %s: %w", path, err)
	}
	return nil
}
