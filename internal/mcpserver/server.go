// Package mcpserver exposes sbx sandboxes as Model Context Protocol tools,
// built on the official Go MCP SDK. It is a plain client of the sbx API: all
// work goes through a Backend (implemented over package client), so the same
// server runs over stdio (`sbx mcp`) and streamable HTTP (the daemon's /mcp).
package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Backend is what the tools need from sbx.
type Backend interface {
	CreateSandbox(ctx context.Context, template string, timeout time.Duration, envs map[string]string) (id string, err error)
	RunCommand(ctx context.Context, id, cmd, user, cwd string, timeout time.Duration) (CommandResult, error)
	RunCode(ctx context.Context, id, code, language string, timeout time.Duration) (CodeResult, error)
	ReadFile(ctx context.Context, id, path string) ([]byte, error)
	WriteFile(ctx context.Context, id, path string, data []byte) error
	ListFiles(ctx context.Context, id, path string, depth int) ([]FileEntry, error)
	KillSandbox(ctx context.Context, id string) error
	// HasTemplate reports whether sandboxes can be created from the template
	// name (false also when it cannot be told).
	HasTemplate(ctx context.Context, name string) bool
}

// CommandResult is the outcome of a shell command. ExitCode is nil when the
// command did not run to an end (the tool result is then isError), so a
// failed call never reads as exit 0.
type CommandResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode *int   `json:"exitCode,omitempty" jsonschema:"the command's exit code (-1: killed by a signal); absent when the command did not run (isError)"`
}

// CodeResult is the outcome of a code cell.
type CodeResult struct {
	Text   string   `json:"text,omitempty"`   // the main result's text/plain
	Stdout string   `json:"stdout,omitempty"` //
	Stderr string   `json:"stderr,omitempty"`
	Error  string   `json:"error,omitempty"` // "Name: value\ntraceback"
	PNGs   [][]byte `json:"-"`               // charts, returned as image content
}

// FileEntry is one entry of a directory listing.
type FileEntry struct {
	Path string `json:"path"`
	Type string `json:"type"` // file, dir, symlink
	Size int64  `json:"size"`
}

// New returns an MCP server with the sbx tools.
func New(b Backend, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sbx", Title: "sbx sandboxes", Version: version}, nil)
	t := tools{checked{b}} // ids, paths, cwd and user bounded before b sees them
	mcp.AddTool(s, &mcp.Tool{Name: "create_sandbox", Description: "Create a new isolated Linux sandbox (Debian, python3, node, git, curl). " +
		"Returns its sandbox_id, which every other tool needs. Sandboxes are killed after their timeout (default 300 s). " +
		"Without a template it is code-interpreter-v1 (for run_code) when the daemon has it, else base."}, t.create)
	mcp.AddTool(s, &mcp.Tool{Name: "run_command", Description: "Run a shell command (bash -l -c) in a sandbox and return stdout, stderr and the exit code. " +
		"A non-zero exit code is reported, not treated as a tool failure."}, t.runCommand)
	mcp.AddTool(s, &mcp.Tool{Name: "run_code", Description: "Run a cell of code in a stateful Jupyter-style context of the sandbox (python by default; also javascript, bash). " +
		"Variables persist between calls. Returns the text result, printed output, errors with traceback, and charts as PNG images. Needs a sandbox of the code-interpreter-v1 template (create_sandbox's default when the daemon has it)."}, t.runCode)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a text file from a sandbox (absolute path, or relative to /home/user)."}, t.readFile)
	mcp.AddTool(s, &mcp.Tool{Name: "write_file", Description: "Write a text file in a sandbox, creating parent directories; it is owned by the sandbox user."}, t.writeFile)
	mcp.AddTool(s, &mcp.Tool{Name: "list_files", Description: "List a directory of a sandbox, optionally several levels deep (at most 1000 entries; the answer says how many more there were)."}, t.listFiles)
	mcp.AddTool(s, &mcp.Tool{Name: "kill_sandbox", Description: "Kill a sandbox and delete everything in it."}, t.kill)
	return s
}
