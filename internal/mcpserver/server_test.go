package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type fakeBackend struct {
	files     map[string][]byte
	listing   []FileEntry // ListFiles' answer; nil: one file
	templates []string    // HasTemplate's answers
	created   []string    // templates of CreateSandbox calls
}

func (f *fakeBackend) CreateSandbox(_ context.Context, tmpl string, _ time.Duration, _ map[string]string) (string, error) {
	f.created = append(f.created, tmpl)
	return "abcdefghij0123456789", nil
}
func (f *fakeBackend) HasTemplate(_ context.Context, name string) bool {
	return slices.Contains(f.templates, name)
}
func (f *fakeBackend) RunCommand(_ context.Context, id, cmd, _, _ string, _ time.Duration) (CommandResult, error) {
	if id != "abcdefghij0123456789" {
		return CommandResult{}, errors.New("sandbox not found")
	}
	if cmd == "slow" {
		time.Sleep(300 * time.Millisecond)
	}
	code := 3
	return CommandResult{Stdout: "out:" + cmd + "\n", ExitCode: &code}, nil
}
func (f *fakeBackend) RunCode(_ context.Context, _, code, _ string, _ time.Duration) (CodeResult, error) {
	if strings.Contains(code, "nokernel") {
		return CodeResult{Error: "KernelStartError: jupyter_client is not installed"}, nil
	}
	if strings.Contains(code, "raise") {
		return CodeResult{Error: "ValueError: x\nTraceback..."}, nil
	}
	return CodeResult{Text: "2", PNGs: [][]byte{[]byte("\x89PNG\r\n\x1a\nfake")}}, nil
}
func (f *fakeBackend) ReadFile(_ context.Context, _, p string) ([]byte, error) {
	b, ok := f.files[p]
	if !ok {
		return nil, errors.New("file not found: " + p)
	}
	return b, nil
}
func (f *fakeBackend) WriteFile(_ context.Context, _, p string, d []byte) error {
	f.files[p] = d
	return nil
}
func (f *fakeBackend) ListFiles(context.Context, string, string, int) ([]FileEntry, error) {
	if f.listing != nil {
		return f.listing, nil
	}
	return []FileEntry{{Path: "/home/user/a", Type: "file", Size: 1}}, nil
}
func (f *fakeBackend) KillSandbox(context.Context, string) error { return nil }

func connect(t *testing.T) *mcp.ClientSession {
	return connectTo(t, &fakeBackend{files: map[string][]byte{}})
}

func connectTo(t *testing.T, b Backend) *mcp.ClientSession {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	s := New(b, "test")
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return r
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsListed(t *testing.T) {
	cs := connect(t)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s lacks description or schema", tl.Name)
		}
	}
	sort.Strings(names)
	want := "create_sandbox,kill_sandbox,list_files,read_file,run_code,run_command,write_file"
	if strings.Join(names, ",") != want {
		t.Fatalf("tools = %v", names)
	}
}

func TestToolCalls(t *testing.T) {
	cs := connect(t)
	id := "abcdefghij0123456789"
	if r := call(t, cs, "create_sandbox", map[string]any{}); r.IsError || !strings.Contains(textOf(r), id) {
		t.Fatalf("create: %v", textOf(r))
	}
	if r := call(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "ls"}); r.IsError || !strings.Contains(textOf(r), "exit code 3") {
		t.Fatalf("run_command: %v", textOf(r))
	}
	if r := call(t, cs, "run_command", map[string]any{"sandbox_id": "nope", "command": "ls"}); !r.IsError {
		t.Fatal("backend error not reported as a tool error")
	}
	r := call(t, cs, "run_code", map[string]any{"sandbox_id": id, "code": "1+1"})
	var img *mcp.ImageContent
	for _, c := range r.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if r.IsError || img == nil || img.MIMEType != "image/png" || !strings.HasPrefix(string(img.Data), "\x89PNG") {
		t.Fatalf("run_code: %+v", r.Content)
	}
	if r := call(t, cs, "run_code", map[string]any{"sandbox_id": id, "code": "raise ValueError"}); !r.IsError || !strings.Contains(textOf(r), "ValueError") {
		t.Fatalf("run_code error: %v", textOf(r))
	}
	call(t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "/x", "content": "hello"})
	if r := call(t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "/x"}); textOf(r) != "hello" {
		t.Fatalf("read_file: %q", textOf(r))
	}
	if r := call(t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "/missing"}); !r.IsError {
		t.Fatal("missing file not a tool error")
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"sandbox_id": 7}}); err == nil {
		// Schema validation failures may be protocol or tool errors; either is clear.
		t.Log("bad arguments accepted as tool error")
	}
}

// TestCreateDefaultTemplate: create_sandbox without a template uses the
// interpreter template when the daemon has it, so run_code works next.
func TestCreateDefaultTemplate(t *testing.T) {
	tests := []struct {
		name     string
		have     []string
		args     map[string]any
		wantTmpl string
	}{
		{"interpreter present", []string{"base", InterpreterTemplate}, map[string]any{}, InterpreterTemplate},
		{"interpreter absent", []string{"base"}, map[string]any{}, "base"},
		{"explicit wins", []string{"base", InterpreterTemplate}, map[string]any{"template": "base"}, "base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &fakeBackend{files: map[string][]byte{}, templates: tt.have}
			cs := connectTo(t, b)
			if r := call(t, cs, "create_sandbox", tt.args); r.IsError {
				t.Fatal(textOf(r))
			}
			if len(b.created) != 1 || b.created[0] != tt.wantTmpl {
				t.Fatalf("created %v, want [%s]", b.created, tt.wantTmpl)
			}
		})
	}
}

// TestRunCodeWithoutKernel: run_code in a sandbox without Jupyter is a tool
// error that says what to do instead.
func TestRunCodeWithoutKernel(t *testing.T) {
	cs := connect(t)
	r := call(t, cs, "run_code", map[string]any{"sandbox_id": "abcdefghij0123456789", "code": "nokernel"})
	txt := textOf(r)
	if !r.IsError || !strings.Contains(txt, "run_command") || !strings.Contains(txt, `"template": "code-interpreter-v1"`) {
		t.Fatalf("got %v %q", r.IsError, txt)
	}
}

// entries returns n file entries whose paths are pathLen bytes long.
func entries(n, pathLen int) []FileEntry {
	es := make([]FileEntry, n)
	for i := range es {
		p := fmt.Sprintf("/home/user/%d-", i)
		es[i] = FileEntry{Path: p + strings.Repeat("x", max(pathLen-len(p), 0)), Type: "file", Size: int64(i)}
	}
	return es
}

// TestListFilesBounded: list_files answers at most maxListEntries entries
// and maxListBytes of text (a sandbox chooses how many files it lists, up
// to the agent's 100,000, and the answer is held in the daemon), in its
// text and its structured result alike, and says how many it left out.
func TestListFilesBounded(t *testing.T) {
	tests := []struct {
		name          string
		listing       []FileEntry
		kept, omitted int
	}{
		{"small", entries(3, 20), 3, 0},
		{"at the entry bound", entries(maxListEntries, 20), maxListEntries, 0},
		{"many entries", entries(20_000, 30), maxListEntries, 20_000 - maxListEntries},
		{"long paths", entries(200, 4000), maxListBytes / 4012, 200 - maxListBytes/4012},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connectTo(t, &fakeBackend{files: map[string][]byte{}, listing: tt.listing})
			r := call(t, cs, "list_files", map[string]any{"sandbox_id": "abcdefghij0123456789"})
			txt := textOf(r)
			var out listOut
			raw, _ := json.Marshal(r.StructuredContent)
			if err := json.Unmarshal(raw, &out); err != nil || r.IsError {
				t.Fatalf("result %v: %v", r.IsError, err)
			}
			lines := strings.Count(txt, "\n")
			note := fmt.Sprintf("[%d more entries not shown", tt.omitted)
			if len(out.Entries) != tt.kept || out.Omitted != tt.omitted || len(txt) > maxListBytes+100 {
				t.Fatalf("kept %d omitted %d, text %d bytes; want %d, %d", len(out.Entries), out.Omitted, len(txt), tt.kept, tt.omitted)
			}
			if tt.omitted > 0 && (lines != tt.kept+1 || !strings.Contains(txt, note)) {
				t.Fatalf("text of %d lines without %q", lines, note)
			}
			if tt.omitted == 0 && (lines != tt.kept || strings.Contains(txt, "not shown")) {
				t.Fatalf("text of %d lines, want %d and no note", lines, tt.kept)
			}
		})
	}
}

// TestRunCommandErrorNoExitCode: a run_command that failed (the sandbox is
// gone, the command could not start) is isError and does not claim exit 0
// in its structured result, which still fits the tool's output schema.
func TestRunCommandErrorNoExitCode(t *testing.T) {
	cs := connect(t)
	r := call(t, cs, "run_command", map[string]any{"sandbox_id": "nope", "command": "ls"})
	raw, _ := json.Marshal(r.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || !r.IsError {
		t.Fatalf("isError %v, structured %s: %v", r.IsError, raw, err)
	}
	if _, ok := out["exitCode"]; ok {
		t.Fatalf("failed run_command claims an exit code: %s", raw)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name != "run_command" {
			continue
		}
		schema, _ := json.Marshal(tl.OutputSchema)
		var s struct{ Required []string }
		if err := json.Unmarshal(schema, &s); err != nil || slices.Contains(s.Required, "exitCode") {
			t.Fatalf("output schema %s requires exitCode: %v", schema, err)
		}
	}
	ok := call(t, cs, "run_command", map[string]any{"sandbox_id": "abcdefghij0123456789", "command": "ls"})
	raw, _ = json.Marshal(ok.StructuredContent)
	if ok.IsError || !strings.Contains(string(raw), `"exitCode":3`) {
		t.Fatalf("successful run_command: %s", raw)
	}
}

// countingBackend records how many calls reached the Backend.
type countingBackend struct {
	*fakeBackend
	calls int
}

func (c *countingBackend) RunCommand(ctx context.Context, id, cmd, user, cwd string, d time.Duration) (CommandResult, error) {
	c.calls++
	return c.fakeBackend.RunCommand(ctx, id, cmd, user, cwd, d)
}
func (c *countingBackend) RunCode(ctx context.Context, id, code, lang string, d time.Duration) (CodeResult, error) {
	c.calls++
	return c.fakeBackend.RunCode(ctx, id, code, lang, d)
}
func (c *countingBackend) ReadFile(ctx context.Context, id, p string) ([]byte, error) {
	c.calls++
	return c.fakeBackend.ReadFile(ctx, id, p)
}
func (c *countingBackend) WriteFile(ctx context.Context, id, p string, d []byte) error {
	c.calls++
	return c.fakeBackend.WriteFile(ctx, id, p, d)
}
func (c *countingBackend) ListFiles(ctx context.Context, id, p string, depth int) ([]FileEntry, error) {
	c.calls++
	return c.fakeBackend.ListFiles(ctx, id, p, depth)
}
func (c *countingBackend) KillSandbox(ctx context.Context, id string) error {
	c.calls++
	return c.fakeBackend.KillSandbox(ctx, id)
}

// TestToolArgumentsBounded: a sandbox_id that is no sandbox id (too long,
// or characters no id has) and a path, cwd, user or language past its bound
// are a short tool error, and the Backend is never called with them.
// Before, the daemon's Backend put a 3 MB sandbox_id into a URL (9 MB
// escaped) and the tool's error quoted it whole: 16 such calls at once took
// the daemon from 144 MB to 1.5 GB of RSS.
func TestToolArgumentsBounded(t *testing.T) {
	const id = "abcdefghij0123456789"
	long := strings.Repeat("%", 1<<20)
	b := &countingBackend{fakeBackend: &fakeBackend{files: map[string][]byte{}}}
	cs := connectTo(t, b)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"kill_sandbox", map[string]any{"sandbox_id": long}},
		{"kill_sandbox", map[string]any{"sandbox_id": "../" + id}},
		{"run_command", map[string]any{"sandbox_id": long, "command": "true"}},
		{"run_command", map[string]any{"sandbox_id": id, "command": "true", "cwd": "/" + long}},
		{"run_command", map[string]any{"sandbox_id": id, "command": "true", "user": long}},
		{"run_code", map[string]any{"sandbox_id": long, "code": "1"}},
		{"run_code", map[string]any{"sandbox_id": id, "code": "1", "language": long}},
		{"read_file", map[string]any{"sandbox_id": long, "path": "/a"}},
		{"read_file", map[string]any{"sandbox_id": id, "path": "/" + long}},
		{"write_file", map[string]any{"sandbox_id": id, "path": "/" + long, "content": "x"}},
		{"list_files", map[string]any{"sandbox_id": id, "path": "/" + long}},
	} {
		r := call(t, cs, c.tool, c.args)
		if txt := textOf(r); !r.IsError || len(txt) > 512 || !strings.Contains(txt, "invalid argument") {
			t.Errorf("%s: isError %v, %d bytes: %.120q, want a short invalid-argument error", c.tool, r.IsError, len(txt), txt)
		}
	}
	if b.calls != 0 {
		t.Errorf("the Backend was called %d times with refused arguments", b.calls)
	}
	if r := call(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "echo"}); r.IsError || b.calls != 1 {
		t.Errorf("a good call: isError %v, %d calls: %s", r.IsError, b.calls, textOf(r))
	}
}
