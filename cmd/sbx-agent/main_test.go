package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The agent runs in every sandbox: it must stay lean and never pull in the
// daemon's packages (state, networking, runtimes, SQLite).
func TestImportsStayLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/sbx-dev/sbx/internal/sandbox", "github.com/sbx-dev/sbx/internal/store",
		"github.com/sbx-dev/sbx/internal/network", "github.com/sbx-dev/sbx/internal/api",
		"github.com/sbx-dev/sbx/internal/proxy", "github.com/sbx-dev/sbx/internal/runtime",
		"github.com/sbx-dev/sbx/internal/egress", "github.com/sbx-dev/sbx/internal/template",
		"github.com/sbx-dev/sbx/internal/layer", "github.com/sbx-dev/sbx/internal/mcpserver",
		"github.com/sbx-dev/sbx/client", "modernc.org/sqlite", "github.com/google/nftables",
		"github.com/vishvananda/netlink", "github.com/mdlayher/netlink", "github.com/miekg/dns",
		"github.com/modelcontextprotocol/go-sdk",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("sbx-agent imports %s", pkg)
			}
		}
	}
}

// CGO_ENABLED=0 gives a static binary: no ELF interpreter, no shared libs.
func TestBuildsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "sbx-agent")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("not static: has %v", p.Type)
		}
	}
	fi, _ := os.Stat(bin)
	t.Logf("sbx-agent: %.1f MiB", float64(fi.Size())/(1<<20))
}

// The init secret leaves the environment: children do not inherit it and
// /proc/<agent>/environ does not show it, whether the environment block can
// be found by the kernel's env_start (Linux) or at the top of the stack
// (gVisor), or the agent must re-exec itself.
func TestInitTokenIsTakenAndHidden(t *testing.T) {
	switch os.Getenv("SBX_AGENT_TEST_HELPER") {
	case "":
	case "reexec":
		scrub = func(string, string) error { return errors.New("no env block here") }
		fallthrough
	case "stack":
		envRegions = []func() (uint64, uint64, error){stackTop}
		fallthrough
	default:
		token := takeInitToken()
		environ, err := os.ReadFile("/proc/self/environ")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("token=%s\nleft-in-env=%v\nleft-in-block=%v\nfd-env=%v\n", token,
			os.Getenv(initTokenEnv) != "", bytes.Contains(environ, []byte("the-secret-value")), os.Getenv(initFDEnv) != "")
		return
	}
	for _, mode := range []string{"scrub", "stack", "reexec"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestInitTokenIsTakenAndHidden$")
			cmd.Env = append(os.Environ(), "SBX_AGENT_TEST_HELPER="+mode, initTokenEnv+"=the-secret-value")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, want := range []string{"token=the-secret-value\n", "left-in-env=false\n", "left-in-block=false\n", "fd-env=false\n"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("want %q in:\n%s", want, out)
				}
			}
		})
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"--port", "0"}, {"--port", "70000"}, {"--nope"}} {
		if err := run(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestReserveThreads: the reserved threads exist after the call and stay.
func TestReserveThreads(t *testing.T) {
	count := func() int {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip("no /proc/self/task")
		}
		return len(ents)
	}
	before := count()
	reserveThreads(8)
	if after := count(); after < before+4 {
		t.Fatalf("threads: %d before, %d after reserving 8", before, after)
	}
}
