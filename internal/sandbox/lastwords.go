package sandbox

import (
	"strings"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/sbx-dev/sbx/internal/runtime"
)

// AgentLog is where the agent's stderr goes once it listens, inside the
// sandbox: a Go runtime's fatal error ("failed to create new OS thread")
// lands there, in the sandbox's own writable layer, not on a host file.
const AgentLog = ".sbx/agent.log"

// lastWordsBytes bounds what is logged of each source.
const lastWordsBytes = 2048

// lastWords is what a sandbox that died on its own left behind, as log
// attributes: the end of its runtime's console log (a gVisor Sentry's
// panic) and of the agent's stderr. Both are bounded and made printable;
// the agent's file is the tenant's, so it is read beneath the rootfs
// without following any link, and only if it is a regular file.
func (m *Manager) lastWords(id string, rt runtime.Sandbox) []any {
	var out []any
	if ct, ok := rt.(runtime.ConsoleTailer); ok {
		if b := ct.ConsoleTail(lastWordsBytes); len(b) > 0 {
			out = append(out, "console", printable(b))
		}
	}
	if rootfs, ok := m.layers.Rootfs(id); ok {
		if b := tailBeneath(rootfs, AgentLog, lastWordsBytes); len(b) > 0 {
			out = append(out, "agent", printable(b))
		}
	}
	return out
}

// tailBeneath is the last n bytes of the regular file at rel beneath root,
// resolved without symlinks or leaving root (nil on any doubt).
func tailBeneath(root, rel string, n int64) []byte {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	off := max(st.Size-n, 0)
	b := make([]byte, st.Size-off)
	k, err := unix.Pread(fd, b, off)
	if err != nil {
		return nil
	}
	return b[:k]
}

// printable is b as one log value: control characters other than newline
// and tab become '?', surrounding space goes.
func printable(b []byte) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (unicode.IsPrint(r) && r != unicode.ReplacementChar) {
			return r
		}
		return '?'
	}, string(b)))
}
