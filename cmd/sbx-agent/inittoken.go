package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// initTokenEnv carries the daemon's /init secret into the agent; initFDEnv
// names the pipe that carries it across the agent's re-exec of itself.
const (
	initTokenEnv = "SBX_AGENT_INIT_TOKEN"
	initFDEnv    = "SBX_AGENT_INIT_FD"
)

// scrub is scrubEnvBlock; tests replace it.
var scrub = scrubEnvBlock

// takeInitToken returns the /init secret and removes it from the agent's
// environment, so no child inherits it, and from the agent's initial
// environment block, so /proc/<agent>/environ does not show it to root code
// in the sandbox. The block is scrubbed in place where the kernel says where
// it is (Linux) or at the top of the stack (gVisor); if that fails the agent
// re-executes itself without the secret, passing it through a pipe.
func takeInitToken() string {
	if fd, ok := os.LookupEnv(initFDEnv); ok {
		_ = os.Unsetenv(initFDEnv)
		return readTokenFD(fd)
	}
	token, ok := os.LookupEnv(initTokenEnv)
	_ = os.Unsetenv(initTokenEnv)
	if !ok || token == "" {
		return ""
	}
	token = strings.Clone(token)
	if err := scrub(initTokenEnv+"=", token); err == nil {
		return token
	}
	if err := reexecWithToken(token); err != nil {
		fmt.Fprintln(os.Stderr, "sbx-agent: cannot hide the init secret from /proc:", err)
	}
	return token
}

// undumpable marks the agent non-dumpable: its /proc entries (mem, environ,
// fds, maps) then need CAP_SYS_PTRACE, which no sandbox process has, so
// sandbox root — by the API or by sudo, both the same root — cannot read
// the /init secret out of its memory. Under crun/runc the kernel already
// does this (the binary's owner is unmapped in the user namespace); this
// makes it hold on every runtime, gVisor included.
func undumpable() {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "sbx-agent: PR_SET_DUMPABLE:", err)
	}
}

// environHas reports whether /proc/self/environ contains s (true if unreadable).
func environHas(s string) bool {
	b, err := os.ReadFile("/proc/self/environ")
	return err != nil || bytes.Contains(b, []byte(s))
}

// reexecWithToken executes the agent again, with the same arguments, an
// environment without the secret, and the secret in a pipe named by
// initFDEnv. It returns only on failure.
func reexecWithToken(token string) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	if _, err := unix.Write(p[1], []byte(token)); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return err
	}
	unix.Close(p[1])
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFD, 0); err != nil {
		unix.Close(p[0])
		return err
	}
	env := append(os.Environ(), initFDEnv+"="+strconv.Itoa(p[0]))
	err := unix.Exec("/proc/self/exe", os.Args, env)
	unix.Close(p[0])
	return err
}

// readTokenFD reads the secret from the pipe a re-exec passed, and closes it.
func readTokenFD(s string) string {
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return ""
	}
	f := os.NewFile(uintptr(fd), "init-token")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return ""
	}
	return string(b)
}

// envRegions are where the initial environment block may be, best first:
// the kernel's env_start..env_end, else the top of the main stack, where the
// block sits (gVisor reports no env_start/env_end).
var envRegions = []func() (uint64, uint64, error){envBlock, stackTop}

// scrubEnvBlock overwrites the value of every entry of this process's
// initial environment block (what /proc/self/environ shows) that starts with
// prefix with 'x' bytes, until /proc/self/environ no longer shows
// prefix+value. It fails if it could not hide it.
func scrubEnvBlock(prefix, value string) error {
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	for _, region := range envRegions {
		start, end, err := region()
		if err != nil || end <= start || end-start > maxEnvScan {
			continue
		}
		if scrubRegion(mem, start, end, prefix) == nil && !environHas(prefix+value) {
			return nil
		}
	}
	return errors.New("environment block not found")
}

// maxEnvScan bounds how much memory scrubEnvBlock reads in one region.
const maxEnvScan = 1 << 20

// scrubRegion overwrites the values of NUL-terminated entries starting with
// prefix in [start, end) of mem. Only the value bytes are written back: the
// region can hold the live main-thread stack (gVisor), and writing back a
// stale copy of the rest of it would corrupt the running program.
func scrubRegion(mem *os.File, start, end uint64, prefix string) error {
	buf := make([]byte, end-start)
	if _, err := mem.ReadAt(buf, int64(start)); err != nil {
		return err
	}
	for off := 0; off < len(buf); {
		n := bytes.IndexByte(buf[off:], 0)
		if n < 0 {
			n = len(buf) - off
		}
		if entry := buf[off : off+n]; bytes.HasPrefix(entry, []byte(prefix)) && len(entry) > len(prefix) {
			at := int64(start) + int64(off+len(prefix))
			if _, err := mem.WriteAt(bytes.Repeat([]byte{'x'}, len(entry)-len(prefix)), at); err != nil {
				return err
			}
		}
		off += n + 1
	}
	return nil
}

// envBlock returns env_start and env_end from /proc/self/stat (fields 50
// and 51, counted after the parenthesised command name).
func envBlock() (uint64, uint64, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 49 {
		return 0, 0, os.ErrInvalid
	}
	start, err1 := strconv.ParseUint(f[47], 10, 64)
	end, err2 := strconv.ParseUint(f[48], 10, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, os.ErrInvalid
	}
	return start, end, nil
}

// stackTop returns the top maxEnvScan bytes of the main stack mapping.
func stackTop() (uint64, uint64, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasSuffix(line, "[stack]") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(line)[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			break
		}
		return max(start, end-min(end, maxEnvScan)), end, nil
	}
	return 0, 0, os.ErrNotExist
}
