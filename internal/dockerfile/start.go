package dockerfile

import (
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// startCmd combines CMD and ENTRYPOINT into the template's start command
// as Docker would run them.
type startCmd struct {
	cmd, entrypoint *instructions.ShellDependantCmdLine
}

func (s *startCmd) setCmd(l instructions.ShellDependantCmdLine) { s.cmd = &l }

// setEntrypoint sets ENTRYPOINT; as in Docker it drops an earlier CMD.
func (s *startCmd) setEntrypoint(l instructions.ShellDependantCmdLine) {
	s.entrypoint, s.cmd = &l, nil
}

// String is the shell command line: ENTRYPOINT (exec form) followed by CMD
// as its arguments, or the one that is set; a shell-form ENTRYPOINT ignores
// CMD, as in Docker.
func (s startCmd) String() string {
	e, c := s.entrypoint, s.cmd
	switch {
	case e == nil && c == nil:
		return ""
	case e == nil:
		return cmdLine(*c)
	case e.PrependShell || c == nil:
		return cmdLine(*e)
	case c.PrependShell:
		return joinWords(shellJoin(e.CmdLine), shellJoin([]string{"/bin/sh", "-c", strings.Join(c.CmdLine, " ")}))
	default:
		return joinWords(shellJoin(e.CmdLine), shellJoin(c.CmdLine))
	}
}

// cmdLine is a shell-form line as written, an exec-form one shell-joined.
func cmdLine(l instructions.ShellDependantCmdLine) string {
	if l.PrependShell {
		return strings.Join(l.CmdLine, " ")
	}
	return shellJoin(l.CmdLine)
}

func joinWords(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + " " + b
}
