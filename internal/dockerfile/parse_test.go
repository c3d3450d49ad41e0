package dockerfile_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sbx-dev/sbx/internal/dockerfile"
)

// head and tail are the steps the SDK adds around every Dockerfile that
// sets no USER or WORKDIR.
var head = []dockerfile.Step{step("USER", "root"), step("WORKDIR", "/")}
var tail = []dockerfile.Step{step("USER", "user"), step("WORKDIR", "/home/user")}

func step(typ string, args ...string) dockerfile.Step {
	return dockerfile.Step{Type: typ, Args: args}
}

func steps(s ...dockerfile.Step) []dockerfile.Step {
	out := append(append([]dockerfile.Step{}, head...), s...)
	return append(out, tail...)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, file string
		args       map[string]string
		want       dockerfile.Spec
	}{
		{"from only", "FROM python:3.12\n", nil,
			dockerfile.Spec{FromImage: "python:3.12", Steps: steps()}},
		{"run shell form", "FROM a\nRUN apt-get update && \\\n  apt-get install -y curl\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("RUN", "apt-get update &&   apt-get install -y curl"))}},
		{"run exec form quoted", "FROM a\nRUN [\"echo\", \"a b\", \"it's\", \"$HOME\"]\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("RUN", `echo 'a b' 'it'"'"'s' '$HOME'`))}},
		{"run flags ignored", "FROM a\nRUN --mount=type=cache,target=/root/.cache pip install x\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("RUN", "pip install x")),
				Warnings: []string{"line 2 of the Dockerfile: RUN flags [mount] are ignored"}}},
		{"user goes with run", "FROM a\nUSER app\nRUN id\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: []dockerfile.Step{head[0], head[1], step("USER", "app"),
				step("RUN", "id", "app"), tail[1]}}},
		{"workdir", "FROM a\nWORKDIR /srv\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: []dockerfile.Step{head[0], head[1], step("WORKDIR", "/srv"), tail[0]}}},
		{"env both forms", "FROM a\nENV A=1 B=\"two words\"\nENV C 3 4\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("ENV", "A", "1", "B", "two words"), step("ENV", "C", "3 4"))}},
		{"env expands env", "FROM a\nENV P=/opt\nENV PATH=$P/bin:$PATH\nWORKDIR ${P}/w\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: []dockerfile.Step{head[0], head[1], step("ENV", "P", "/opt"),
				step("ENV", "PATH", "/opt/bin:$PATH"), step("WORKDIR", "/opt/w"), tail[0]}}},
		{"copy", "FROM a\nCOPY --chown=app:app --chmod=755 x.sh y/ /dst/\nADD z /z\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("COPY", "x.sh", "/dst/", "app:app", "0755"),
				step("COPY", "y/", "/dst/", "app:app", "0755"), step("COPY", "z", "/z", "root", ""))}},
		{"copy json form", "FROM a\nCOPY [\"a b\", \"/c d/\"]\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("COPY", "a b", "/c d/", "root", ""))}},
		{"add archive warns", "FROM a\nADD x.tar.gz /opt/\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("COPY", "x.tar.gz", "/opt/", "root", "")),
				Warnings: []string{"line 2 of the Dockerfile: ADD x.tar.gz copies the archive; it is not unpacked"}}},
		{"cmd shell form", "FROM a\nCMD python -m http.server\n", nil,
			dockerfile.Spec{FromImage: "a", StartCmd: "python -m http.server", Steps: steps()}},
		{"cmd exec form", "FROM a\nCMD [\"node\", \"my app.js\"]\n", nil,
			dockerfile.Spec{FromImage: "a", StartCmd: "node 'my app.js'", Steps: steps()}},
		{"entrypoint and cmd", "FROM a\nENTRYPOINT [\"/init\"]\nCMD [\"serve\", \"-v\"]\n", nil,
			dockerfile.Spec{FromImage: "a", StartCmd: "/init serve -v", Steps: steps()}},
		{"entrypoint shell form ignores cmd", "FROM a\nCMD x\nENTRYPOINT /run.sh arg\n", nil,
			dockerfile.Spec{FromImage: "a", StartCmd: "/run.sh arg", Steps: steps()}},
		{"arg defaults", "ARG BASE=debian:12\nFROM $BASE\nARG V=1.0\nRUN echo $V\nCOPY app-${V}.tgz /opt/\n", nil,
			dockerfile.Spec{FromImage: "debian:12", Steps: steps(step("ENV", "V", "1.0"), step("RUN", "echo $V"),
				step("COPY", "app-1.0.tgz", "/opt/", "root", ""))}},
		{"build args override", "ARG BASE=debian:12\nFROM ${BASE}\nARG V=1.0\nARG NODEF\nWORKDIR /v$V\n",
			map[string]string{"BASE": "ubuntu:24.04", "V": "2", "EXTRA": "x"},
			dockerfile.Spec{FromImage: "ubuntu:24.04", Steps: []dockerfile.Step{head[0], head[1], step("ENV", "V", "2"),
				step("WORKDIR", "/v2"), tail[0]}, Warnings: []string{"build args not declared by any ARG: [EXTRA]"}}},
		{"global arg redeclared", "ARG V=3\nFROM a\nARG V\nRUN echo $V\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("ENV", "V", "3"), step("RUN", "echo $V"))}},
		{"ignored instructions", "FROM a\nEXPOSE 80\nLABEL a=b\nHEALTHCHECK CMD true\n" +
			"STOPSIGNAL SIGINT\nVOLUME /data\nONBUILD RUN x\nMAINTAINER me\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(), Warnings: []string{
				"line 2 of the Dockerfile: EXPOSE is ignored", "line 3 of the Dockerfile: LABEL is ignored",
				"line 4 of the Dockerfile: HEALTHCHECK is ignored",
				"line 5 of the Dockerfile: STOPSIGNAL is ignored", "line 6 of the Dockerfile: VOLUME is ignored",
				"line 7 of the Dockerfile: ONBUILD is ignored", "line 8 of the Dockerfile: MAINTAINER is ignored"}}},
		// SHELL changes how later shell-form lines run (before, it was
		// ignored: RUN set -o pipefail ... ran under /bin/sh and failed).
		{"shell", "FROM a\nRUN echo sh\nSHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\nRUN set -o pipefail; false | true\n" +
			"RUN [\"echo\", \"exec\"]\nCMD python app.py\nSHELL [\"/bin/sh\", \"-c\"]\nRUN echo back\n", nil,
			dockerfile.Spec{FromImage: "a", StartCmd: "/bin/bash -o pipefail -c 'python app.py'", Steps: steps(step("RUN", "echo sh"),
				step("RUN", "/bin/bash -o pipefail -c 'set -o pipefail; false | true'"), step("RUN", "echo exec"), step("RUN", "echo back"))}},
		{"shell with exec entrypoint", "FROM a\nSHELL [\"/bin/bash\", \"-c\"]\nENTRYPOINT [\"/init\"]\nCMD serve now\n", nil,
			dockerfile.Spec{FromImage: "a", StartCmd: "/init /bin/bash -c 'serve now'", Steps: steps()}},
		{"comments and escape directive", "# escape=`\nFROM a\n# note\nRUN echo a `\n  b\n", nil,
			dockerfile.Spec{FromImage: "a", Steps: steps(step("RUN", "echo a   b"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dockerfile.Parse(strings.NewReader(tt.file), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, got, cmpopts.IgnoreUnexported(dockerfile.Spec{})); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"empty", "", "parsing Dockerfile"},
		{"no from", "# nothing\nARG X=1\n", "no FROM"},
		{"multi-stage", "FROM a AS b\nRUN x\nFROM c\n", "line 3 of the Dockerfile: multi-stage Dockerfiles are not supported (a second FROM; the first is on line 1)"},
		{"scratch", "FROM scratch\n", "line 1 of the Dockerfile: FROM scratch is not supported"},
		{"before from", "RUN x\nFROM a\n", "line 1 of the Dockerfile: only ARG may come before FROM"},
		{"copy from", "FROM a\nCOPY --from=builder /x /y\n", "line 2 of the Dockerfile: COPY --from=builder is not supported"},
		{"add url", "FROM a\n\nADD https://example.com/x.tgz /x\n", "line 3 of the Dockerfile: ADD https://example.com/x.tgz: remote sources are not supported"},
		{"add git", "FROM a\nADD git@github.com:a/b.git /b\n", "line 2 of the Dockerfile: ADD git@github.com:a/b.git: remote"},
		{"absolute src", "FROM a\nCOPY /etc/passwd /x\n", "line 2 of the Dockerfile: source \"/etc/passwd\": absolute paths"},
		{"escaping src", "FROM a\nCOPY ../x /x\n", "line 2 of the Dockerfile: source \"../x\": the path escapes"},
		{"bad chmod", "FROM a\nCOPY --chmod=u+x a /a\n", "line 2 of the Dockerfile: --chmod=u+x: want an octal mode"},
		{"unknown instruction", "FROM a\nFOO bar\n", "line 2 of the Dockerfile: unknown instruction"},
		{"run heredoc", "FROM a\nRUN <<EOF\necho hi\nEOF\n", "line 2 of the Dockerfile: RUN with a heredoc"},
		{"bad expansion", "FROM a\nWORKDIR ${X\n", "line 2 of the Dockerfile: expanding variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dockerfile.Parse(strings.NewReader(tt.file), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestOnTemplate: a spec built on an sbx template runs its steps as root
// in / as for an image (E2B's Dockerfile convention: RUN apt-get and
// WORKDIR /app work as written), and ends with the base template's user
// and workdir where the Dockerfile sets none of its own (E2B's user and
// /home/user when the base's are not known).
func TestOnTemplate(t *testing.T) {
	root := []dockerfile.Step{step("USER", "root"), step("WORKDIR", "/")}
	on := func(s ...dockerfile.Step) []dockerfile.Step {
		return append(append([]dockerfile.Step{}, root...), s...)
	}
	tests := []struct {
		name, file    string
		user, workdir string
		want          []dockerfile.Step
	}{
		{"no user or workdir", "FROM my-app\nRUN touch /tmp/x\n", "app", "/srv/app",
			on(step("RUN", "touch /tmp/x"), step("USER", "app"), step("WORKDIR", "/srv/app"))},
		{"base not known", "FROM my-app\nRUN id\n", "", "",
			on(step("RUN", "id"), step("USER", "user"), step("WORKDIR", "/home/user"))},
		{"own user", "FROM my-app\nUSER root\nRUN id\n", "app", "/srv/app",
			on(step("USER", "root"), step("RUN", "id", "root"), step("WORKDIR", "/srv/app"))},
		{"own workdir and user", "FROM my-app\nWORKDIR /w\nUSER bob\n", "app", "/srv/app",
			on(step("WORKDIR", "/w"), step("USER", "bob"))},
		{"nothing", "FROM my-app\n", "app", "/srv/app", on(step("USER", "app"), step("WORKDIR", "/srv/app"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := dockerfile.Parse(strings.NewReader(tt.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			spec.OnTemplate("my-app:v1", tt.user, tt.workdir)
			if spec.FromTemplate != "my-app:v1" || spec.FromImage != "" {
				t.Errorf("from %q / %q", spec.FromTemplate, spec.FromImage)
			}
			if diff := cmp.Diff(tt.want, spec.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}
