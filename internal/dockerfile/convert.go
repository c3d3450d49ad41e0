package dockerfile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// converter accumulates the Spec while walking the instructions in order.
type converter struct {
	lex      *shell.Lex // after FROM: unknown variables stay as written
	fromLex  *shell.Lex // FROM: unknown variables are empty
	args     args
	global   *vars // ARGs before FROM: they expand FROM only
	env      *vars // ARG and ENV values after FROM
	spec     Spec
	fromLine int
	user     string // the Dockerfile's current USER, "" if none yet
	workdir  bool   // the Dockerfile set a WORKDIR
	start    startCmd
	shell    []string // SHELL's command, nil for Docker's default /bin/sh -c
}

func newConverter(escape rune, buildArgs map[string]string) *converter {
	lex := shell.NewLex(escape)
	// The base image's ENV (PATH, say) is unknown here: "$PATH" is kept
	// for the build to expand rather than replaced by "".
	lex.SkipUnsetEnv = true
	return &converter{
		lex:     lex,
		fromLex: shell.NewLex(escape),
		args:    args{given: buildArgs, used: map[string]bool{}},
		global:  newVars(),
		env:     newVars(),
		spec:    Spec{Steps: []Step{}},
	}
}

// add converts one instruction found at line.
func (c *converter) add(line int, cmd any) error {
	if st, ok := cmd.(*instructions.Stage); ok {
		return c.from(line, st)
	}
	if a, ok := cmd.(*instructions.ArgCommand); ok {
		return c.arg(a)
	}
	if c.fromLine == 0 {
		return errors.New("only ARG may come before FROM")
	}
	if ex, ok := cmd.(instructions.SupportsSingleWordExpansion); ok {
		if err := ex.Expand(expander(c.lex, c.env)); err != nil {
			return fmt.Errorf("expanding variables: %w", err)
		}
	}
	return c.instruction(line, cmd)
}

// instruction dispatches an expanded instruction other than FROM and ARG.
func (c *converter) instruction(line int, cmd any) error {
	switch x := cmd.(type) {
	case *instructions.RunCommand:
		return c.run(line, x)
	case *instructions.CopyCommand:
		return c.copyCmd(x)
	case *instructions.AddCommand:
		return c.addCmd(line, x)
	case *instructions.EnvCommand:
		c.envCmd(x)
	case *instructions.WorkdirCommand:
		c.workdir = true
		c.step("WORKDIR", x.Path)
	case *instructions.UserCommand:
		c.user = x.User
		c.step("USER", x.User)
	case *instructions.CmdCommand:
		c.start.setCmd(c.withShell(x.ShellDependantCmdLine))
	case *instructions.EntrypointCommand:
		c.start.setEntrypoint(c.withShell(x.ShellDependantCmdLine))
	case *instructions.ShellCommand:
		c.setShell(x.Shell)
	case instructions.Command:
		c.warnf(line, "%s is ignored", strings.ToUpper(x.Name()))
	default:
		return fmt.Errorf("unsupported instruction %T", cmd)
	}
	return nil
}

// from handles the one FROM: the base image, with global ARGs expanded.
func (c *converter) from(line int, st *instructions.Stage) error {
	if c.fromLine != 0 {
		return fmt.Errorf("multi-stage Dockerfiles are not supported (a second FROM; the first is on line %d)", c.fromLine)
	}
	c.fromLine = line
	image, err := expander(c.fromLex, c.global)(st.BaseName)
	if err != nil {
		return fmt.Errorf("FROM: %w", err)
	}
	switch {
	case image == "":
		return errors.New("FROM: empty image name")
	case image == "scratch":
		return errors.New("FROM scratch is not supported: a template needs a base image with a userland")
	}
	if st.Platform != "" {
		c.warnf(line, "FROM --platform is ignored")
	}
	c.spec.FromImage = image
	c.step("USER", "root")
	c.step("WORKDIR", "/")
	return nil
}

// arg handles ARG: before FROM it only feeds FROM; after, it is set as ENV.
func (c *converter) arg(a *instructions.ArgCommand) error {
	env := c.env
	if c.fromLine == 0 {
		env = c.global
	}
	lex := c.lex
	if c.fromLine == 0 {
		lex = c.fromLex
	}
	if err := a.Expand(expander(lex, env)); err != nil {
		return fmt.Errorf("expanding variables: %w", err)
	}
	var kv []string
	for _, p := range a.Args {
		v, ok := c.args.resolve(p, c.global)
		if !ok {
			continue
		}
		env.set(p.Key, v)
		kv = append(kv, p.Key, v)
	}
	if c.fromLine != 0 && len(kv) > 0 {
		c.step("ENV", kv...)
	}
	return nil
}

// envCmd handles ENV in both forms (k=v ... and k v).
func (c *converter) envCmd(e *instructions.EnvCommand) {
	kv := make([]string, 0, 2*len(e.Env))
	for _, p := range e.Env {
		c.env.set(p.Key, p.Value)
		kv = append(kv, p.Key, p.Value)
	}
	c.step("ENV", kv...)
}

// run handles RUN; the current USER, if the Dockerfile set one, goes along.
func (c *converter) run(line int, r *instructions.RunCommand) error {
	if len(r.Files) > 0 {
		return errors.New("RUN with a heredoc is not supported")
	}
	if len(r.FlagsUsed) > 0 {
		c.warnf(line, "RUN flags %v are ignored", r.FlagsUsed)
	}
	cmd := cmdLine(c.withShell(r.ShellDependantCmdLine))
	if c.user != "" {
		c.step("RUN", cmd, c.user)
	} else {
		c.step("RUN", cmd)
	}
	return nil
}

// finish closes the spec: the SDK's trailing defaults and the start command.
func (c *converter) finish() (*Spec, error) {
	if c.fromLine == 0 {
		return nil, errors.New("the Dockerfile has no FROM instruction")
	}
	if c.user == "" {
		c.step("USER", "user")
		c.spec.tail++
	}
	if !c.workdir {
		c.step("WORKDIR", "/home/user")
		c.spec.tail++
	}
	c.spec.StartCmd = c.start.String()
	c.spec.Warnings = append(c.spec.Warnings, c.args.unused()...)
	return &c.spec, nil
}

func (c *converter) step(typ string, args ...string) {
	c.spec.Steps = append(c.spec.Steps, Step{Type: typ, Args: args})
}

func (c *converter) warnf(line int, format string, a ...any) {
	c.spec.Warnings = append(c.spec.Warnings, fmt.Sprintf("line %d of the Dockerfile: ", line)+fmt.Sprintf(format, a...))
}
