package oci

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// crun compiles the seccomp profile with libseccomp on every `crun run`:
// about 8 ms of CPU, close to half of what crun spends starting a sandbox.
// The filter it compiled is left in its state directory
// (<root>/<id>/seccomp.bpf, root-only, outside every sandbox). The backend
// keeps the first one it sees per profile and hands it to later runs in the
// annotation run.oci.seccomp_bpf_data, with which crun loads those bytes
// instead of compiling: the filter is still libseccomp's, compiled by crun
// from the same profile, as crun's own cache does in later versions. The key
// covers the profile and the crun binary on disk (a crun upgrade under a
// running daemon compiles afresh); the cache lives in memory only.

// bpfAnnotation makes crun ignore linux.seccomp and load the base64 filter.
const bpfAnnotation = "run.oci.seccomp_bpf_data"

// maxBPFBytes is the kernel's bound on a filter (BPF_MAXINSNS instructions
// of 8 bytes).
const maxBPFBytes = 4096 * 8

// bpfCache maps a profile key to a compiled filter, base64. The zero value
// is ready; its methods are safe for concurrent use.
type bpfCache struct {
	mu sync.Mutex // guards m
	m  map[string]string
}

// binaryID identifies the file at path: inode, size and times (a package
// upgrade renames a new file into place: another inode).
func binaryID(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return path
	}
	return fmt.Sprintf("%s:%d:%d:%d:%d:%d", path, st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano())
}

// filterKey is the cache key of sp's seccomp profile ("" when it has none).
func (r *Runtime) filterKey(sp *specs.Spec) string {
	if r.kind != "crun" || sp.Linux == nil || sp.Linux.Seccomp == nil {
		return ""
	}
	b, err := json.Marshal(sp.Linux.Seccomp)
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", binaryID(r.cfg.Binary))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// useCachedFilter puts the compiled filter of key into sp's annotations and
// reports whether there was one.
func (r *Runtime) useCachedFilter(sp *specs.Spec, key string) bool {
	if key == "" {
		return false
	}
	r.filters.mu.Lock()
	b64, ok := r.filters.m[key]
	r.filters.mu.Unlock()
	if !ok {
		return false
	}
	if sp.Annotations == nil {
		sp.Annotations = map[string]string{}
	}
	sp.Annotations[bpfAnnotation] = b64
	return true
}

// learnFilter keeps the filter crun compiled for sandbox id under key. A
// missing or malformed file is skipped: the next run compiles again.
func (r *Runtime) learnFilter(key, id string) {
	b, err := os.ReadFile(filepath.Join(r.root, id, "seccomp.bpf"))
	if err != nil || len(b) == 0 || len(b)%8 != 0 || len(b) > maxBPFBytes {
		return
	}
	r.filters.mu.Lock()
	defer r.filters.mu.Unlock()
	if r.filters.m == nil {
		r.filters.m = map[string]string{}
	}
	if _, ok := r.filters.m[key]; !ok {
		r.filters.m[key] = base64.StdEncoding.EncodeToString(b)
	}
}
