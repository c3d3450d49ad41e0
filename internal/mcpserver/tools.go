package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type tools struct{ b Backend }

// Every handler returns errors as tool results (IsError), never as protocol
// failures, so the model sees what went wrong and can correct itself.
func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func seconds(v int, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return time.Duration(v) * time.Second
}

type createIn struct {
	Template       string            `json:"template,omitempty" jsonschema:"template name; default code-interpreter-v1 (needed by run_code) when the daemon has it, else base"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty" jsonschema:"seconds until the sandbox is killed, default 300"`
	Envs           map[string]string `json:"envs,omitempty" jsonschema:"environment variables for every process"`
}

type createOut struct {
	SandboxID string `json:"sandbox_id"`
}

func (t tools) create(ctx context.Context, _ *mcp.CallToolRequest, in createIn) (*mcp.CallToolResult, createOut, error) {
	tmpl := in.Template
	if tmpl == "" {
		tmpl = t.defaultTemplate(ctx)
	}
	id, err := t.b.CreateSandbox(ctx, tmpl, seconds(in.TimeoutSeconds, 300*time.Second), in.Envs)
	if err != nil {
		return toolError(err), createOut{}, nil
	}
	return text("created sandbox " + id), createOut{SandboxID: id}, nil
}

type commandIn struct {
	SandboxID      string `json:"sandbox_id" jsonschema:"the sandbox to run in"`
	Command        string `json:"command" jsonschema:"shell command, run with bash -l -c"`
	User           string `json:"user,omitempty" jsonschema:"user, default user (root allowed)"`
	Cwd            string `json:"cwd,omitempty" jsonschema:"working directory, default /home/user"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"kill the command after this many seconds, default 60"`
}

func (t tools) runCommand(ctx context.Context, _ *mcp.CallToolRequest, in commandIn) (*mcp.CallToolResult, CommandResult, error) {
	r, err := t.b.RunCommand(ctx, in.SandboxID, in.Command, in.User, in.Cwd, seconds(in.TimeoutSeconds, time.Minute))
	if err != nil {
		return toolError(err), CommandResult{}, nil
	}
	if r.ExitCode == nil {
		return toolError(fmt.Errorf("run_command: no exit code")), CommandResult{}, nil
	}
	msg := fmt.Sprintf("exit code %d\n--- stdout ---\n%s--- stderr ---\n%s", *r.ExitCode, r.Stdout, r.Stderr)
	return text(msg), r, nil
}

type codeIn struct {
	SandboxID      string `json:"sandbox_id" jsonschema:"the sandbox to run in (template code-interpreter-v1)"`
	Code           string `json:"code" jsonschema:"the code cell"`
	Language       string `json:"language,omitempty" jsonschema:"python (default), javascript, typescript or bash"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"interrupt the cell after this many seconds, default 60"`
}

func (t tools) runCode(ctx context.Context, _ *mcp.CallToolRequest, in codeIn) (*mcp.CallToolResult, any, error) {
	r, err := t.b.RunCode(ctx, in.SandboxID, in.Code, in.Language, seconds(in.TimeoutSeconds, time.Minute))
	if err != nil {
		return toolError(err), nil, nil
	}
	res := &mcp.CallToolResult{IsError: r.Error != ""}
	if strings.HasPrefix(r.Error, kernelStartError) {
		res.Content = append(res.Content, &mcp.TextContent{Text: noInterpreterHint(in.SandboxID)})
	}
	for _, part := range []struct{ label, s string }{{"", r.Text}, {"stdout:\n", r.Stdout}, {"stderr:\n", r.Stderr}, {"error:\n", r.Error}} {
		if part.s != "" {
			res.Content = append(res.Content, &mcp.TextContent{Text: part.label + part.s})
		}
	}
	for _, png := range r.PNGs {
		res.Content = append(res.Content, &mcp.ImageContent{Data: png, MIMEType: "image/png"})
	}
	if len(res.Content) == 0 {
		res.Content = []mcp.Content{&mcp.TextContent{Text: "(no output)"}}
	}
	return res, nil, nil
}

type pathIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox"`
	Path      string `json:"path" jsonschema:"absolute path, or relative to /home/user"`
}

func (t tools) readFile(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
	b, err := t.b.ReadFile(ctx, in.SandboxID, in.Path)
	if err != nil {
		return toolError(err), nil, nil
	}
	return text(string(b)), nil, nil
}

type writeIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox"`
	Path      string `json:"path" jsonschema:"absolute path, or relative to /home/user"`
	Content   string `json:"content" jsonschema:"the file's full text"`
}

func (t tools) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, any, error) {
	if err := t.b.WriteFile(ctx, in.SandboxID, in.Path, []byte(in.Content)); err != nil {
		return toolError(err), nil, nil
	}
	return text(fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)), nil, nil
}

type listIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox"`
	Path      string `json:"path,omitempty" jsonschema:"directory, default /home/user"`
	Depth     int    `json:"depth,omitempty" jsonschema:"levels to descend, default 1"`
}

type listOut struct {
	Entries []FileEntry `json:"entries"`
	Omitted int         `json:"omitted,omitempty"` // entries past the bounds, not listed
}

// list_files answers at most maxListEntries entries and maxListBytes of
// text, and says how many it left out: the listing is the sandbox's choice
// (up to the agent's 100,000 entries) and the answer, sent twice (text and
// structured), is held in the daemon's memory and a model's context.
const (
	maxListEntries = 1000
	maxListBytes   = 256 << 10
)

func (t tools) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, listOut, error) {
	if in.Path == "" {
		in.Path = "/home/user"
	}
	es, err := t.b.ListFiles(ctx, in.SandboxID, in.Path, max(in.Depth, 1))
	if err != nil {
		return toolError(err), listOut{}, nil
	}
	var b strings.Builder
	kept := 0
	for _, e := range es {
		line := fmt.Sprintf("%s\t%s\t%d\n", e.Type, e.Path, e.Size)
		if kept == maxListEntries || b.Len()+len(line) > maxListBytes {
			break
		}
		b.WriteString(line)
		kept++
	}
	out := listOut{Entries: es[:kept], Omitted: len(es) - kept}
	if out.Omitted > 0 {
		fmt.Fprintf(&b, "[%d more entries not shown: list a subdirectory or a smaller depth]\n", out.Omitted)
	}
	return text(b.String()), out, nil
}

type idIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox"`
}

func (t tools) kill(ctx context.Context, _ *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, any, error) {
	if err := t.b.KillSandbox(ctx, in.SandboxID); err != nil {
		return toolError(err), nil, nil
	}
	return text("killed " + in.SandboxID), nil, nil
}

// InterpreterTemplate is the template run_code needs; create_sandbox uses it
// by default when the daemon has it.
const InterpreterTemplate = "code-interpreter-v1"

// kernelStartError is the error name of a run_code in a sandbox without a
// kernel (the base template has no jupyter_client).
const kernelStartError = "KernelStartError"

// defaultTemplate is the template of a create_sandbox without one: the
// interpreter template when the daemon has it, so that the obvious
// create_sandbox → run_code sequence works, else base.
func (t tools) defaultTemplate(ctx context.Context) string {
	if t.b.HasTemplate(ctx, InterpreterTemplate) {
		return InterpreterTemplate
	}
	return "base"
}

func noInterpreterHint(id string) string {
	return fmt.Sprintf("sandbox %s has no code interpreter (its template lacks Jupyter). Use run_command instead, "+
		"or create a sandbox with create_sandbox {\"template\": %q} (an operator builds it once with "+
		"`sbx template build %s` on the daemon's host).", id, InterpreterTemplate, InterpreterTemplate)
}
