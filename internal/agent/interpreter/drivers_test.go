package interpreter

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// TestJavaDriver runs java_driver.java in a real JVM when the host has a
// JDK (java and jshell): state between cells, a final expression's value,
// stdout and stderr, the error shapes, env_vars as system properties for
// one cell, the sandbox's env vars as system properties, and an interrupt
// that keeps the state.
func TestJavaDriver(t *testing.T) {
	if _, err := exec.LookPath("jshell"); err != nil {
		t.Skip("no JDK (jshell) on this host")
	}
	k := newLangContext(t, Java, map[string]string{"SBX_GLOBAL": "g"})
	run := func(code string, env map[string]string) []line { return collect(k, context.Background(), code, env) }
	if out := run("int x = 41;", nil); len(out) != 1 || out[0]["type"] != "number_of_executions" {
		t.Fatalf("declaration: %v", out)
	}
	tests := []struct {
		code, want string
		env        map[string]string
	}{
		{code: "x + 1", want: "result:42"},
		{code: `String s = "a\"b"; s`, want: `result:a"b`},
		{code: `System.out.println("one"); System.err.print("two")`, want: "stdout:one\n|stderr:two"},
		{code: "int f() { return 1 / 0; }\nf()", want: "error:ArithmeticException:/ by zero"},
		{code: "int y = ;", want: "error:CompilationException:illegal start of expression"},
		{code: `System.getProperty("E")`, want: "result:v", env: map[string]string{"E": "v"}},
		{code: `System.getProperty("E", "unset")`, want: "result:unset"},
		{code: `System.getProperty("SBX_GLOBAL")`, want: "result:g"},
	}
	for _, tt := range tests {
		if got := summary(run(tt.code, tt.env)); got != tt.want {
			t.Errorf("%q = %q, want %q", tt.code, got, tt.want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if got := summary(collect(k, ctx, "while (true) {}", nil)); !strings.HasPrefix(got, "error:KeyboardInterrupt") {
		t.Errorf("interrupted loop = %q", got)
	}
	if got := summary(run("x", nil)); got != "result:41" {
		t.Errorf("after the interrupt x = %q, want 41", got)
	}
}

// TestJavaDriverInterruptWhileCompiling: an interrupt that comes while the
// cell is still being compiled stops it once its code runs, keeping the
// state. It stopped nothing (JShell.stop found no code running): the loop
// then ran until the grace was out and the context was restarted, its
// state lost, as a loaded machine's slow compile made TestJavaDriver's
// 2 s interrupt do.
func TestJavaDriverInterruptWhileCompiling(t *testing.T) {
	if _, err := exec.LookPath("jshell"); err != nil {
		t.Skip("no JDK (jshell) on this host")
	}
	k := newLangContext(t, Java, nil)
	run := func(code string) string { return summary(collect(k, context.Background(), code, nil)) }
	if got := run("int x = 41;"); got != "" {
		t.Fatalf("declaration: %q", got)
	}
	// one snippet, slow to compile, that loops once it runs
	cell := "{ int a = 0;\n" + strings.Repeat("a += x;\n", 4000) + "while (true) {} }"
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if got := summary(collect(k, ctx, cell, nil)); !strings.HasPrefix(got, "error:KeyboardInterrupt") {
		t.Errorf("cell interrupted while it compiled = %q", got)
	}
	if got := run("x"); got != "result:41" {
		t.Errorf("after the interrupt x = %q, want 41", got)
	}
}

// TestTypeScriptDriver runs node_driver.js for typescript when the host's
// node can require typescript (NODE_PATH is passed on): types erased, state
// kept, imports bound to their names for later cells, a syntax error named,
// top-level await with a value, env_vars for one cell.
func TestTypeScriptDriver(t *testing.T) {
	if err := exec.Command("node", "-e", "require('typescript')").Run(); err != nil {
		t.Skip("no node with the typescript module on this host")
	}
	k := newLangContext(t, TypeScript, map[string]string{"NODE_PATH": os.Getenv("NODE_PATH")})
	tests := []struct {
		code, want string
		env        map[string]string
	}{
		{code: "const x: number = 41", want: ""},
		{code: "x + 1", want: "result:42"},
		{code: "function sub(a: number, b: number): number { return a - b }\nsub(1, 2)", want: "result:-1"},
		{code: "import { join } from 'path'\nimport type { Stats } from 'fs'", want: ""},
		{code: "join('a', 'b')", want: "result:a/b"},
		{code: "interface P { a: number }\nconst p: P = { a: 1 }; console.log(p.a)", want: "stdout:1\n"},
		{code: "const y: number = ;", want: "error:SyntaxError:TS1109: Expression expected."},
		{code: "const h = await Promise.resolve('hi')\nawait Promise.resolve(h + '!')", want: "result:hi!"},
		{code: "h", want: "result:hi"},
		{code: "process.env.TV", want: "result:v", env: map[string]string{"TV": "v"}},
		{code: "String(process.env.TV)", want: "result:undefined"},
		{code: "throw new RangeError('bad')", want: "error:RangeError:bad"},
	}
	for _, tt := range tests {
		if got := summary(collect(k, context.Background(), tt.code, tt.env)); got != tt.want {
			t.Errorf("%q = %q, want %q", tt.code, got, tt.want)
		}
	}
}

// newLangContext is a lang context of a server whose user is the test's own.
func newLangContext(t *testing.T, lang string, envs map[string]string) *kcontext {
	t.Helper()
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	if err := os.WriteFile(passwd, []byte("user:x:"+itoa(os.Getuid())+":"+itoa(os.Getgid())+"::"+dir+":/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "group"), nil, 0o644) //nolint:errcheck
	st := identity.NewState()
	st.Apply(identity.Init{EnvVars: envs})
	s, err := New(Config{State: st, User: "user", Users: identity.Files{Passwd: passwd, Group: filepath.Join(dir, "group")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	k, err := s.newContext(lang, dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// collect runs code in k and returns the lines it sent.
func collect(k *kcontext, ctx context.Context, code string, env map[string]string) []line {
	out := make(chan line, 256)
	go func() {
		defer close(out)
		k.execute(ctx, code, env, out)
	}()
	var lines []line
	for l := range out {
		lines = append(lines, l)
	}
	return lines
}

// summary condenses lines to "type:text" parts joined by "|" (no counts).
func summary(lines []line) string {
	var parts []string
	for _, l := range lines {
		switch l["type"] {
		case "stdout", "stderr":
			parts = append(parts, l["type"].(string)+":"+l["text"].(string))
		case "result":
			parts = append(parts, "result:"+l["text"].(string))
		case "error":
			parts = append(parts, "error:"+l["name"].(string)+":"+l["value"].(string))
		}
	}
	return strings.Join(parts, "|")
}
