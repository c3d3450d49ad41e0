package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestAttackBattery runs hostile code in real sandboxes on runsc and crun
// through a real daemon: the security probes of testdata/probe.py (as user,
// as root, and as root reached through sudo) and the resource attacks of battery_resources_test.go, each in
// its own sandbox. Meanwhile a canary sandbox runs a small exec in a loop:
// every exec must succeed and its p95 latency stay under canaryBound. After
// each attacked sandbox is deleted, the daemon's host inventory (cgroups,
// netns, links, nftables, mounts, layers, runtime state, processes) is back
// at its baseline, and the host's runtime binaries are unchanged at the end.
//
// runc gets the security probes only (as user, root and root through sudo):
// it shares crun's spec, so the resource attacks would repeat crun's.
func TestAttackBattery(t *testing.T) {
	for _, rt := range []string{"runsc", "crun", "runc"} {
		t.Run(rt, func(t *testing.T) { battery(t, rt, rt != "runc") })
	}
}

// canaryBound is generous: a loaded 2-core CI box runs the fork bomb, the
// CPU spinners and the floods next to the canary.
const canaryBound = 5 * time.Second

func battery(t *testing.T, rt string, resources bool) {
	d := startDaemon(t, rt, "")
	bins := hostBinaries(t)
	before := hashes(t, bins)
	canarySB := d.create(nil)
	base := d.inventory(canarySB.ID)
	c := startCanary(canarySB)
	attack := func(name string, opts map[string]any, fn func(t *testing.T, sb *sandbox)) {
		t.Run(name, func(t *testing.T) {
			sb := d.create(opts)
			t.Cleanup(func() {
				if code := d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil); code != 204 && code != 404 {
					t.Errorf("delete after %s: %d", name, code)
				}
				d.backToBaseline(t, base, sb.ID)
			})
			fn(t, sb)
		})
	}
	attack("probes", nil, func(t *testing.T, sb *sandbox) { securityProbes(t, sb, rt) })
	for _, r := range resourceAttacks {
		if resources {
			attack(r.name, r.opts, func(t *testing.T, sb *sandbox) { r.fn(t, sb, rt) })
		}
	}
	c.check(t, canaryBound)
	if after := hashes(t, bins); !maps.Equal(before, after) {
		t.Errorf("host binaries changed during the battery:\nbefore %v\nafter  %v", before, after)
	}
}

// hostBinaries are the files a /proc/self/exe-class attack would overwrite.
func hostBinaries(t *testing.T) []string {
	out := []string{runscBinary()}
	for _, b := range []string{"crun", "runc"} {
		if p, err := exec.LookPath(b); err == nil {
			out = append(out, p)
		}
	}
	sbx, _ := filepath.Abs("../bin/sbx")
	out = append(out, sbx, filepath.Join(filepath.Dir(sbx), "sbx-agent"))
	_, templates := requirements(t)
	for _, rootfs := range []string{"rootfs", "rootfs-userns"} {
		for _, f := range []string{"usr/bin/python3", "bin/bash", "usr/bin/sudo"} {
			if p, err := filepath.EvalSymlinks(filepath.Join(templates, "base", rootfs, f)); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

func hashes(t *testing.T, files []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// agentHealthy reports whether the sandbox's agent answers /health through
// the daemon's proxy.
func (s *sandbox) agentHealthy() bool {
	req, _ := http.NewRequest("GET", s.d.url+"/health", nil)
	req.Header.Set("E2b-Sandbox-Id", s.ID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode/100 == 2
}
