// Package dockerfile turns a Dockerfile into the build steps of E2B's
// template API (TemplateBuildStartV2) and computes the file hashes and
// context archives of its COPY steps exactly as the E2B SDKs do, so that a
// template built from a Dockerfile by `sbx template build` and one built by
// the SDK's Template().fromDockerfile() share the daemon's build cache.
//
// Parsing is buildkit's (frontend/dockerfile/parser and instructions); the
// conversion follows the JS SDK's src/template/dockerfileParser.ts.
package dockerfile

import (
	"fmt"
	"io"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Step is one build step: type RUN, COPY, ENV, WORKDIR or USER.
//
//	RUN     [cmd] or [cmd, user]
//	COPY    [src, dest, user, mode]   (user and mode may be "")
//	ENV     [k1, v1, k2, v2, ...]
//	WORKDIR [dir]
//	USER    [user]
type Step struct {
	Type      string   `json:"type"`
	Args      []string `json:"args"`
	FilesHash string   `json:"filesHash,omitempty"`
	Force     bool     `json:"force"`
}

// Spec is the body of POST /v2/templates/{templateID}/builds/{buildID}.
type Spec struct {
	FromImage    string `json:"fromImage,omitempty"`
	FromTemplate string `json:"fromTemplate,omitempty"`
	StartCmd     string `json:"startCmd,omitempty"`
	ReadyCmd     string `json:"readyCmd,omitempty"`
	Force        bool   `json:"force"`
	Steps        []Step `json:"steps"`

	// Warnings name the instructions that were ignored, with their lines.
	Warnings []string `json:"-"`

	// tail counts the default steps finish appended (USER user, WORKDIR
	// /home/user); the two first steps are always FROM's USER root, WORKDIR /.
	tail int
}

// OnTemplate makes s build on the sbx template ref instead of pulling
// FromImage. Its steps run as for an image, as root in / until the
// Dockerfile says otherwise (the convention of E2B's Dockerfile builds, and
// what Dockerfiles expect: `RUN apt-get …` and `WORKDIR /app` work as
// written), but where the Dockerfile sets no USER or WORKDIR of its own the
// template built ends with the base's, user and workdir (each "" keeps
// E2B's user in /home/user), as a Dockerfile's FROM of a local image
// inherits them and as the SDK's fromTemplate does.
func (s *Spec) OnTemplate(ref, user, workdir string) {
	s.FromTemplate, s.FromImage = ref, ""
	for i := max(len(s.Steps)-s.tail, 0); i < len(s.Steps); i++ {
		switch st := &s.Steps[i]; {
		case st.Type == "USER" && user != "":
			st.Args = []string{user}
		case st.Type == "WORKDIR" && workdir != "":
			st.Args = []string{workdir}
		}
	}
}

// Parse converts the Dockerfile read from r. buildArgs override the
// defaults of its ARG instructions. Errors name the Dockerfile line.
//
// As the SDK does, the steps start with USER root and WORKDIR / (Docker's
// defaults) and end with USER user and WORKDIR /home/user (E2B's sandbox
// defaults) when the Dockerfile sets no USER or WORKDIR of its own; ARG
// values become ENV steps so that RUN commands see them.
func Parse(r io.Reader, buildArgs map[string]string) (*Spec, error) {
	res, err := parser.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parsing Dockerfile: %w", err)
	}
	c := newConverter(res.EscapeToken, buildArgs)
	for _, n := range res.AST.Children {
		cmd, err := instructions.ParseInstruction(n)
		if err != nil {
			return nil, lineErr(n.StartLine, err)
		}
		if err := c.add(n.StartLine, cmd); err != nil {
			return nil, lineErr(n.StartLine, err)
		}
	}
	return c.finish()
}

// lineErr prefixes err with the Dockerfile line.
func lineErr(line int, err error) error {
	return fmt.Errorf("line %d of the Dockerfile: %w", line, err)
}
