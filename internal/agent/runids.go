package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// E2B's envd puts a sandbox's identity in its env (E2B_SANDBOX=true,
// E2B_SANDBOX_ID, E2B_TEAM_ID, E2B_TEMPLATE_ID: the daemon sends them in
// /init's envVars) and, for shells that do not get that env (a terminal
// opened otherwise than through the SDK), as dot files in /run/e2b: E2B's
// docs tell users to read /run/e2b/.E2B_SANDBOX_ID there.
const runIDsDir = "run/e2b" // under Config.TrustRoot, "/" in a sandbox

// runIDKeys are the env vars written to runIDsDir as ".<key>".
var runIDKeys = []string{"E2B_SANDBOX", "E2B_SANDBOX_ID", "E2B_TEAM_ID", "E2B_TEMPLATE_ID"}

// runIDsMemo remembers what this process last wrote, so an /init that
// changes nothing (a resume's) touches no file.
type runIDsMemo struct {
	mu   sync.Mutex
	last map[string]string
}

// write puts each of runIDKeys that env has into root/run/e2b. An env
// without E2B_SANDBOX_ID (a pooled sandbox's pre-init, an agent run by
// hand) writes nothing. The directory must be a real directory owned by
// root: the files are written by root inside the sandbox and never through
// a symlink (O_NOFOLLOW on each file, Lstat on the directory), so a user
// who planted links cannot make the agent write elsewhere.
func (m *runIDsMemo) write(root string, env map[string]string) error {
	if env["E2B_SANDBOX_ID"] == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[string]string{}
	for _, k := range runIDKeys {
		if v, ok := env[k]; ok {
			want[k] = v
		}
	}
	if equalMaps(want, m.last) {
		return nil
	}
	dir := filepath.Join(root, runIDsDir)
	if err := ownDir(dir); err != nil {
		return err
	}
	for k, v := range want {
		if err := writeNoFollow(filepath.Join(dir, "."+k), []byte(v)); err != nil {
			return err
		}
	}
	m.last = want
	return nil
}

// ownDir makes dir (0755) if missing and checks that it is a directory,
// not a link, owned by root.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("%s is not a directory of the agent's own", dir)
	}
	return nil
}

func writeNoFollow(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Close())
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) || b == nil {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
