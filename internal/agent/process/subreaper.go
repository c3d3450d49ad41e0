package process

import (
	"fmt"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// SubreaperExecArg, as the agent binary's first argument, makes it run
// SubreaperExec on the rest: "sbx-agent <SubreaperExecArg> path argv...".
// (The shim is preferred: see UseSubreaperExec.)
const SubreaperExecArg = "__sbx_subreaper_exec"

// subreaperArgv is what starts a command as a child subreaper: the
// program and first arguments to which the command's path and argv are
// appended (nil: commands are started directly). Set once at start by
// UseSubreaperExec.
var subreaperArgv []string

// UseSubreaperExec makes the service start every command through a
// subreaper exec, so that each command's leader is a child subreaper and
// its whole tree stays findable (killTree): the shim at shim when it is not
// empty (see package shim; under gVisor it also bounds the command's
// processes), else the agent's own binary exe (whose main calls
// SubreaperExec when its first argument is SubreaperExecArg; slower: a Go
// program's start-up per command). Call it once at agent start-up, before
// any process is started.
func UseSubreaperExec(shim, exe string) {
	switch {
	case shim != "":
		subreaperArgv = []string{shim}
	case exe != "":
		subreaperArgv = []string{exe, SubreaperExecArg}
	}
}

// SubreaperExec makes the calling process a child subreaper and executes
// args[0] with argv args[1:] and the current environment; the attribute
// survives execve. It returns only on failure, after printing it to stderr
// as a shell would, with exit status 127.
func SubreaperExec(args []string) {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "sbx-agent: subreaper exec: missing program")
		os.Exit(127)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "sbx-agent: subreaper:", err)
		os.Exit(127)
	}
	err := syscall.Exec(args[0], args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "%s: %v\n", args[1], err)
	os.Exit(127)
}

// launch returns the path and argv that start path with argv: through the
// subreaper exec when it is set up.
func launch(path string, argv []string) (string, []string) {
	via := subreaperArgv
	if via == nil {
		return path, argv
	}
	return via[0], append(append(slices.Clone(via), path), argv...)
}
