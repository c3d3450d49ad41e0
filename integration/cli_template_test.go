package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCLIDockerfileOnTemplate: `sbx template build -f` with a FROM that
// names an sbx template builds on it offline (no registry is reachable
// here), its steps as root in / as for an image, the base's user and
// workdir carrying on to the template built, SHELL applied, ENV
// PATH=/x:$PATH evaluated for the steps, the child's too (before, PATH
// was "/x:$PATH" and no RUN found mkdir); a child
// of that template builds the same way; a FROM whose tag the template
// lacks fails at the base step saying how FROM was read. Before, every
// such FROM was pulled as an image and failed offline.
func TestCLIDockerfileOnTemplate(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	build := func(name, dockerfile string) (int, string) {
		t.Helper()
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644))
		code, _, errOut := d.cliRun(t, "", "template", "build", "-n", name, dir)
		return code, errOut
	}
	if code, errOut := build("it-cli-parent", "FROM base\nUSER root\nENV PATH=/srv/p/bin:$PATH\n"+
		"RUN mkdir -p /srv/p/bin && echo p > /srv/p/f && printf '#!/bin/sh\\necho tool\\n' > /srv/p/bin/mytool && chmod +x /srv/p/bin/mytool && chown -R user /srv/p\n"+
		"SHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\nRUN [[ -o pipefail ]] && echo bash > /srv/p/shell\n"+
		"WORKDIR /srv/p\nUSER user\n"); code != 0 {
		t.Fatalf("FROM base: exit %d\n%s", code, errOut)
	}
	// the child's steps run as root in / (apt-get and WORKDIR /app work as
	// written); the child keeps the parent's user and workdir
	if code, errOut := build("it-cli-child", "FROM it-cli-parent\nRUN id -un > /srv/p/who; pwd >> /srv/p/who; mytool >> /srv/p/who; mkdir /opt/kid && touch /opt/kid/made\n"); code != 0 {
		t.Fatalf("FROM it-cli-parent: exit %d\n%s", code, errOut)
	}
	out, _ := d.create(map[string]any{"templateID": "it-cli-child"}).run("", "id -un; pwd; cat f shell who; stat -c %U /opt/kid/made; ls /tmp", 20*time.Second)
	if want := "user\n/srv/p\np\nbash\nroot\n/\ntool\nroot\n"; !strings.HasPrefix(out, want) || strings.Count(out, "sbx-interpreter-") != 1 {
		t.Fatalf("a sandbox of the child sees:\n%s\nwant it to start with:\n%s(and one interpreter dir in /tmp)", out, want)
	}
	code, errOut := build("it-cli-notag", "FROM it-cli-parent:nosuchtag\nRUN true\n")
	for _, want := range []string{"the build failed at step base: base template 'it-cli-parent:nosuchtag' not found",
		"to pull the image, write FROM docker.io/library/it-cli-parent:nosuchtag"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Fatalf("FROM with a missing tag: exit %d, want 1 and %q in:\n%s", code, want, errOut)
		}
	}
}
