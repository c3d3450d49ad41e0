// Package shim makes the agent's subreaper shim: a one-page static program
// that makes itself a child subreaper (and, optionally, bounds its user's
// processes) and executes the command it is given, so that every command's
// leader keeps its whole tree (see the process package's killTree).
package shim

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// shimCode is the machine code of the subreaper shim, per GOARCH: a few
// instructions, so that starting a command through it costs one execve of
// a one-page program (measured ~3 ms on runsc, like /usr/bin/env) instead
// of the Go agent's own start-up (~24 ms there). With argv
// "shim program argv0 argv1 ...", it does
//
//	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
//	execve(argv[1], &argv[2], envp)
//	exit_group(127)              // prctl or execve failed
//
// amd64, assembled from (GNU as syntax):
//
//	mov $36, %edi; mov $1, %esi; xor %edx, %edx; xor %r10d, %r10d; xor %r8d, %r8d
//	mov $157, %eax; syscall                        # prctl
//	test %eax, %eax; jnz fail
//	mov (%rsp), %rcx                               # argc
//	mov 16(%rsp), %rdi; lea 24(%rsp), %rsi         # argv[1], &argv[2]
//	lea 16(%rsp,%rcx,8), %rdx                      # envp = &argv[argc+1]
//	mov $59, %eax; syscall                         # execve
//	fail: mov $127, %edi; mov $231, %eax; syscall  # exit_group
var shimCode = map[string][]byte{
	"amd64": {
		0xbf, 0x24, 0x00, 0x00, 0x00, // mov $36, %edi
		0xbe, 0x01, 0x00, 0x00, 0x00, // mov $1, %esi
		0x31, 0xd2, // xor %edx, %edx
		0x45, 0x31, 0xd2, // xor %r10d, %r10d
		0x45, 0x31, 0xc0, // xor %r8d, %r8d
		0xb8, 0x9d, 0x00, 0x00, 0x00, // mov $157, %eax
		0x0f, 0x05, // syscall
		0x85, 0xc0, // test %eax, %eax
		0x75, 0x1a, // jnz fail (+0x1a)
		0x48, 0x8b, 0x0c, 0x24, // mov (%rsp), %rcx
		0x48, 0x8b, 0x7c, 0x24, 0x10, // mov 16(%rsp), %rdi
		0x48, 0x8d, 0x74, 0x24, 0x18, // lea 24(%rsp), %rsi
		0x48, 0x8d, 0x54, 0xcc, 0x10, // lea 16(%rsp,%rcx,8), %rdx
		0xb8, 0x3b, 0x00, 0x00, 0x00, // mov $59, %eax
		0x0f, 0x05, // syscall
		0xbf, 0x7f, 0x00, 0x00, 0x00, // fail: mov $127, %edi
		0xb8, 0xe7, 0x00, 0x00, 0x00, // mov $231, %eax
		0x0f, 0x05, // syscall
	},
}

// nprocPrefix is code put before shimCode in a shim that also limits the
// number of processes of its user (amd64 only):
//
//	mov $6, %edi; lea rlim(%rip), %rsi   # RLIMIT_NPROC, the limit after the code
//	mov $160, %eax; syscall              # setrlimit
//	test %eax, %eax; jnz fail            # fail: the exit_group at the end of shimCode
//	rlim: .quad N, N                     # appended after shimCode
var nprocPrefix = map[string]func(codeLen int) []byte{
	"amd64": func(codeLen int) []byte {
		const n = 0x17                    // this prefix's length
		lea := uint32(n + codeLen - 0x0c) // from the end of the lea to rlim
		fail := byte(codeLen - 12)        // from the end of the jnz (= n) to fail, shimCode's last 12 bytes
		return []byte{
			0xbf, 0x06, 0x00, 0x00, 0x00, // mov $6, %edi
			0x48, 0x8d, 0x35, byte(lea), byte(lea >> 8), byte(lea >> 16), byte(lea >> 24), // lea rlim(%rip), %rsi
			0xb8, 0xa0, 0x00, 0x00, 0x00, // mov $160, %eax
			0x0f, 0x05, // syscall
			0x85, 0xc0, // test %eax, %eax
			0x75, fail, // jnz fail
		}
	},
}

// subreaperArg is the offset in shimCode of the prctl's second argument
// (the immediate of "mov $1, %esi"): 1 makes the program a child
// subreaper, 0 leaves it none (the prctl then changes nothing).
const subreaperArg = 6

// ELF returns the shim as a static ELF executable for this machine, or
// nil when there is no shim for its architecture. With nproc > 0 the shim
// first sets its RLIMIT_NPROC (soft and hard) to nproc, which the command
// and all it starts inherit.
func ELF(nproc uint64) []byte { return build(nproc, true) }

// LimitELF is ELF without the subreaper: a program that only sets the
// process limit (nproc > 0) and executes the command, for long-lived
// commands that do not reap orphans (interpreter drivers): theirs go to the
// agent, PID 1, as before.
func LimitELF(nproc uint64) []byte { return build(nproc, false) }

// build makes the shim's ELF (see ELF), a child subreaper or not.
func build(nproc uint64, subreaper bool) []byte {
	code, ok := shimCode[runtime.GOARCH]
	if !ok {
		return nil
	}
	if !subreaper {
		code = slices.Clone(code)
		code[subreaperArg] = 0
	}
	if nproc > 0 {
		code = append(nprocPrefix[runtime.GOARCH](len(code)), code...)
		code = binary.LittleEndian.AppendUint64(code, nproc)
		code = binary.LittleEndian.AppendUint64(code, nproc)
	}
	const base = 0x400000
	const hdrs = 64 + 56 // ELF header + one program header
	size := uint64(hdrs + len(code))
	h := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Entry: base + hdrs, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	p := elf.Prog64{
		Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X),
		Vaddr: base, Paddr: base, Filesz: size, Memsz: size, Align: 0x1000,
	}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, h)
	_ = binary.Write(&b, binary.LittleEndian, p)
	b.Write(code)
	return b.Bytes()
}

// Install writes a shim (ELF or LimitELF's b) as dir/name, owned by the
// agent, mode 0755, replacing whatever was there, and returns its path.
// Only for the agent of a sandbox (dir is inside it).
func Install(dir, name string, b []byte) (string, error) {
	if b == nil {
		return "", fmt.Errorf("no subreaper shim for %s", runtime.GOARCH)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".subreaper-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name()) // after a successful rename: nothing
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	p := filepath.Join(dir, name)
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	return p, err
}
