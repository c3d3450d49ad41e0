package oci

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// allowedSyscalls is Docker's default allow-list (moby/profiles/seccomp,
// x86_64 and common entries), minus what needs capabilities we never grant.
// Everything else fails with EPERM. Notably absent: bpf, perf_event_open,
// userfaultfd, io_uring_*, keyctl/add_key/request_key, kexec_*, *_module,
// mount/umount2/pivot_root/setns, unshare (but for CLONE_FS alone), ptrace, process_vm_*, clock_settime,
// settimeofday, adjtimex-writes, open_by_handle_at, name_to_handle_at, acct,
// swapon/swapoff, reboot, quotactl, lookup_dcookie, vm86, personality (args).
var allowedSyscalls = []string{
	"accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "capget", "capset", "chdir",
	"chmod", "chown", "chown32", "clock_adjtime", "clock_getres", "clock_getres_time64", "clock_gettime",
	"clock_gettime64", "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range", "connect",
	"copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl",
	"epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2",
	"execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64",
	"fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat",
	"fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr",
	"fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate",
	"ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv", "futex_wake",
	"futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32", "geteuid",
	"geteuid32", "getgid", "getgid32", "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid",
	"getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid",
	"getresuid32", "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt",
	"get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr", "inotify_add_watch",
	"inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", "io_getevents",
	"io_pgetevents", "io_pgetevents_time64", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "ipc",
	"kill", "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lchown32",
	"lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr", "_llseek", "lremovexattr", "lseek",
	"lsetxattr", "lstat", "lstat64", "madvise", "map_shadow_stack", "membarrier", "memfd_create",
	"memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap",
	"mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
	"mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap", "msgctl",
	"msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
	"nanosleep", "newfstatat", "_newselect", "open", "openat", "openat2", "pause", "pidfd_open",
	"pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll",
	"ppoll_time64", "prctl", "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6",
	"pselect6_time64", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat",
	"readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages",
	"removexattr", "rename", "renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction",
	"rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
	"rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_getaffinity",
	"sched_getattr", "sched_getparam", "sched_get_priority_max", "sched_get_priority_min",
	"sched_getscheduler", "sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity",
	"sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl",
	"semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg",
	"sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid", "setgid32",
	"setgroups", "setgroups32", "setitimer", "setpgid", "setpriority", "setregid", "setregid32",
	"setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
	"set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address", "setuid", "setuid32",
	"setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4",
	"sigprocmask", "sigreturn", "socketcall", "socketpair", "splice", "stat", "stat64", "statfs",
	"statfs64", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee",
	"tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
	"timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create", "timerfd_gettime",
	"timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
	"truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat",
	"utimensat_time64", "utimes", "vfork", "wait4", "waitid", "waitpid", "write", "writev",
	"arm_fadvise64_64", "sync_file_range2", "cachestat",
}

// nsFlags are the clone flags that create namespaces (CLONE_NEWNS,
// CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
// CLONE_NEWNET, CLONE_NEWTIME); clone with any of them is refused.
const nsFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

// cloneFS is CLONE_FS, the one flag unshare may take.
const cloneFS = 0x00000200

// afVsock is refused like Docker does: host-guest sockets are no business of
// a sandbox.
const afVsock = 40

// Seccomp returns the sandbox profile for backend kind: allow-list, EPERM
// otherwise; clone only without namespace flags; clone3 answers ENOSYS (so
// libcs fall back to clone, whose flags can be checked). gVisor does not
// honour a per-rule errno (clone3 would fail with EPERM and glibc would not
// fall back: no threads at all), and its own kernel is the boundary there,
// so under runsc clone3 is allowed. unshare is allowed with CLONE_FS alone
// (a private cwd, root and umask for the calling thread; no namespace, no
// privilege): the agent gives each thread that does file work as a user
// that user's umask (identity.As).
func Seccomp(kind string) *specs.LinuxSeccomp {
	eperm, enosys := uint(1), uint(38)
	clone3 := specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys}
	if kind == "runsc" {
		clone3 = specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActAllow}
	}
	return &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		Architectures:   []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32},
		Syscalls: []specs.LinuxSyscall{
			{Names: allowedSyscalls, Action: specs.ActAllow},
			{Names: []string{"clone"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: nsFlags, ValueTwo: 0, Op: specs.OpMaskedEqual}}},
			clone3,
			{Names: []string{"unshare"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: cloneFS, Op: specs.OpEqualTo}}},
			{Names: []string{"socket"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: afVsock, Op: specs.OpNotEqual}}},
			{Names: []string{"personality"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 0x0, Op: specs.OpEqualTo}}},
			{Names: []string{"personality"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 0x0008, Op: specs.OpEqualTo}}},
			{Names: []string{"personality"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: 0xffffffff, Op: specs.OpEqualTo}}},
		},
	}
}
