package dockerfile

import (
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// defaultShell is Docker's shell, the one build steps and start commands
// run their command lines with.
var defaultShell = []string{"/bin/sh", "-c"}

// setShell handles SHELL: later shell-form RUN, CMD and ENTRYPOINT lines
// run through it, as in Docker.
func (c *converter) setShell(sh []string) {
	c.shell = nil
	if !slices.Equal(sh, defaultShell) {
		c.shell = slices.Clone(sh)
	}
}

// withShell is l with a SHELL other than Docker's default applied: a
// shell-form line becomes the exec form [shell..., line], which the
// build step's shell (bash, as on E2B) then runs. Exec-form lines are as they are.
func (c *converter) withShell(l instructions.ShellDependantCmdLine) instructions.ShellDependantCmdLine {
	if !l.PrependShell || c.shell == nil {
		return l
	}
	return instructions.ShellDependantCmdLine{CmdLine: append(slices.Clone(c.shell), strings.Join(l.CmdLine, " "))}
}
