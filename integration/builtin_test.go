package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The built-in templates are the template builder's: base is registered in
// the templates dir as a stack of layers of the layer store (the Debian
// source, then the provisioning layer), marked as a built-in's so no
// daemon's GC frees them; `sbx template build base` again is a cache hit
// answered in well under a second; a daemon with a fresh database lists it
// and serves sandboxes of it on runsc and crun (the user, its home from
// /etc/skel, python, node, git, sudoers).
func TestTemplateBuiltins(t *testing.T) {
	sbxBin, templates := requirements(t, "runsc", "crun")
	reg := readRegistration(t, templates, "base")
	if len(reg.Layers) != 2 || reg.Key == "" {
		t.Fatalf("base's registration: %+v", reg)
	}
	for _, l := range reg.Layers {
		for _, f := range []string{"size", "users/builtin", "userns-done"} {
			if _, err := os.Stat(filepath.Join(templates, "layers", l, f)); err != nil {
				t.Errorf("layer %s of base: %v", l, err)
			}
		}
	}
	t0 := time.Now()
	out, err := exec.Command(sbxBin, "template", "build", "base", "--templates-dir", templates, "--data-dir", t.TempDir()).CombinedOutput()
	if took := time.Since(t0); err != nil || took > time.Second || !strings.Contains(string(out), "cached") || !strings.Contains(string(out), "up to date") {
		t.Fatalf("rebuild of base: %v after %s:\n%s", err, took, out)
	}
	if again := readRegistration(t, templates, "base"); again.BuildID != reg.BuildID {
		t.Fatalf("rebuild registered build %s, want the cached %s", again.BuildID, reg.BuildID)
	}
	d := startDaemon(t, "runsc", "")
	var list []struct{ TemplateID, BuildID string }
	if code := d.api("GET", "/templates", nil, &list); code != 200 {
		t.Fatalf("GET /templates: %d", code)
	}
	found := false
	for _, tm := range list {
		found = found || tm.TemplateID == "base" && tm.BuildID == reg.BuildID
	}
	if !found {
		t.Fatalf("GET /templates lacks base (build %s): %+v", reg.BuildID, list)
	}
	const script = `whoami; pwd; stat -c '%U %a' ~; test -f ~/.profile && echo skel; python3 -c 'print(6*7)'; node -e 'console.log(1)'; git --version | cut -d' ' -f1; echo $LANG`
	for _, rt := range []string{"runsc", "crun"} {
		sb := d.create(map[string]any{"templateID": "base", "runtime": rt})
		if out, _ := sb.run("", script, 20*time.Second); out != "user\n/home/user\nuser 755\nskel\n42\n1\ngit\nC.UTF-8\n" {
			t.Errorf("%s sandbox of base: %q", rt, out)
		}
		if out, _ := sb.run("root", "cat /etc/sudoers.d/user; id -u user", 20*time.Second); out != "user ALL=(ALL:ALL) NOPASSWD: ALL\n1000\n" {
			t.Errorf("%s sandbox of base, as root: %q", rt, out)
		}
		d.deleteQuiet(sb.ID)
	}
}

type registration struct {
	BuildID string   `json:"buildId"`
	Layers  []string `json:"layers"`
	Key     string   `json:"key"`
}

func readRegistration(t *testing.T, templates, name string) registration {
	t.Helper()
	var r registration
	b, err := os.ReadFile(filepath.Join(templates, name, "template.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("registration of %s: %v", name, err)
	}
	return r
}
