package oci

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestSeccompDenies checks that the profile allows none of the syscalls a
// hostile sandbox uses to reach the host kernel's soft spots.
func TestSeccompDenies(t *testing.T) {
	denied := []string{"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "mount", "umount2", "pivot_root", "setns",
		"ptrace", "process_vm_readv", "process_vm_writev", "clock_settime", "settimeofday", "open_by_handle_at",
		"name_to_handle_at", "acct", "swapon", "swapoff", "reboot", "quotactl", "fsopen", "fsmount", "move_mount",
		"open_tree", "mount_setattr", "pidfd_getfd", "iopl", "ioperm", "vmsplice", "lookup_dcookie", "syslog", "uselib"}
	for _, kind := range []string{"runsc", "crun", "runc"} {
		p := Seccomp(kind)
		if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
			t.Errorf("%s: default %s/%v, want EPERM", kind, p.DefaultAction, p.DefaultErrnoRet)
		}
		for _, sc := range denied {
			for _, r := range p.Syscalls {
				if slices.Contains(r.Names, sc) && r.Action == specs.ActAllow {
					t.Errorf("%s: %s allowed (%+v)", kind, sc, r.Args)
				}
			}
		}
	}
}

// TestSeccompConditional checks the argument filters: clone without
// namespace flags, clone3 refused with ENOSYS outside gVisor (so libc falls
// back to the filterable clone), unshare of CLONE_FS alone, socket without
// AF_VSOCK.
func TestSeccompConditional(t *testing.T) {
	for _, tc := range []struct {
		kind         string
		clone3Action specs.LinuxSeccompAction
	}{{"runsc", specs.ActAllow}, {"crun", specs.ActErrno}, {"runc", specs.ActErrno}} {
		rules := map[string][]specs.LinuxSyscall{}
		for _, r := range Seccomp(tc.kind).Syscalls {
			for _, n := range r.Names {
				rules[n] = append(rules[n], r)
			}
		}
		clone := rules["clone"]
		if len(clone) != 1 || len(clone[0].Args) != 1 || clone[0].Args[0].Op != specs.OpMaskedEqual ||
			clone[0].Args[0].Value&0x7E020000 != 0x7E020000 || clone[0].Args[0].ValueTwo != 0 {
			t.Errorf("%s: clone rule %+v", tc.kind, clone)
		}
		if c3 := rules["clone3"]; len(c3) != 1 || c3[0].Action != tc.clone3Action {
			t.Errorf("%s: clone3 rule %+v", tc.kind, c3)
		}
		if u := rules["unshare"]; len(u) != 1 || len(u[0].Args) != 1 || u[0].Args[0].Op != specs.OpEqualTo || u[0].Args[0].Value != 0x200 {
			t.Errorf("%s: unshare rule %+v, want CLONE_FS alone", tc.kind, u)
		}
		if s := rules["socket"]; len(s) != 1 || len(s[0].Args) != 1 || s[0].Args[0].Op != specs.OpNotEqual || s[0].Args[0].Value != 40 {
			t.Errorf("%s: socket rule %+v", tc.kind, s)
		}
	}
}
