// Package oci implements runtime.Runtime with OCI runtimes: gVisor's runsc
// (systrap platform), crun and runc. One spec builder (buildSpec) serves all
// three; the backends differ in flags, in user namespaces and, for crun, in
// the hybrid-cgroup workaround.
//
// # Lifecycle
//
// Create validates the spec, claims the id (a bundle directory under
// <StateDir>/bundles-<kind>; an id with a bundle or runtime state is refused
// with fs.ErrExist and never torn down), writes config.json and runs
// `<runtime> run --detach --pid-file` in its own session with stdio on
// <bundle>/console.log: the sandbox is reparented away from the daemon and
// survives it. Load re-adopts through `<runtime> state`; List reads the
// bundle and --root directories; Kill is `kill --all`; Delete is
// `delete --force` (SIGKILL, then release), removes leftover cgroup
// directories and the bundle, and is idempotent. Every runtime command is
// bounded by Config.Timeout, its session is killed on timeout, and its
// stderr is part of the error.
//
// # Isolation
//
// crun and runc: a user namespace maps sandbox 0..65535 to host
// UIDBase..UIDBase+65535 (the rootfs must be owned by that range), so
// sandbox root is never host root; a cgroup namespace; /sys is a read-only
// rbind of the host's (sysfs cannot be mounted from a user namespace that
// does not own the netns), with the sandbox's own cgroups mounted read-only
// over /sys/fs/cgroup and the host's network devices masked, so neighbours'
// ids, veths and usage stay invisible. runsc: gVisor's Sentry is the boundary (sandbox root is root of a
// user-space kernel); no user namespace is requested, runsc runs with
// --network=sandbox (gVisor's netstack takes the veth address of the
// netns: the agent is reached through it, not through the netns loopback),
// --overlay2=none (the writable layer is ours) and --oci-seccomp.
//
// All backends: pid, mount, ipc, uts and network namespaces; the capability
// set in capabilities (no SYS_ADMIN, NET_RAW, SYS_PTRACE, MKNOD, ...) as
// the bounding set, which also bounds what a setuid-root exec gains;
// noNewPrivileges off, so `sudo` works as on E2B (runsc: --allow-suid, the
// Sentry applies the setuid bit); Docker's masked and read-only paths; the devices cgroup
// denies everything but the runtime's standard nodes; oom_score_adj 500 so
// the kernel picks sandbox processes before the daemon.
//
// Seccomp (Seccomp): Docker's allow-list, default EPERM, clone only without
// namespace flags, no AF_VSOCK sockets. runc and crun load it into the host
// kernel; with --oci-seccomp gVisor enforces the same profile inside its
// Sentry (defense in depth: gVisor's own host filter guards the host). One
// difference: gVisor ignores a per-rule errno, so clone3, which elsewhere
// answers ENOSYS to push libc back to the filterable clone, is allowed under
// runsc.
//
// # Limits
//
// Zero Limits fields get DefaultMemory (512 MiB, swap equal: no swap),
// DefaultCPU (1 core: quota 100000 per period 100000), DefaultPids (512) and
// DefaultNoFile (4096, soft = hard). crun and runc enforce them per process
// (an OOM kills the offender inside the sandbox). Under runsc the host
// cgroups bound the Sentry and its systrap stubs as a whole, except that on
// a cgroup v1 memory controller the stubs get a guest memory cgroup of
// their own (guestmem.go) so that a balloon waits there until the agent's
// OOM guard kills it; guest memory the Sentry commits itself it refuses
// past the limit (sbx's gVisor patch 20-sentry-memory-limit) and bounds the
// pipe buffers on its heap (patch 21-pipe-buffer-limit); the rest of its heap
// past the parent's limit still gets the whole sandbox OOM-killed (State
// then reports stopped), and so does a fork bomb past the pids limit (the
// Sentry's own threads count too: give runsc sandboxes >= 128 pids).
//
// Cgroups live under an "sbx" parent: /sys/fs/cgroup/<controller>/sbx/<id>
// on v1 and hybrid hosts, /sys/fs/cgroup/sbx/<id> on pure v2 hosts (detected
// at New). crun refuses hybrid hosts, so there it runs in a private mount
// namespace with /sys/fs/cgroup/unified unmounted. runc needs a rootfs path
// without symlinks: Create resolves it.
//
// # Checkpoint
//
// runsc sandboxes implement runtime.Checkpointer and the runsc Runtime
// implements runtime.Restorer (`runsc checkpoint` / `runsc restore
// --detach`); the other backends return an error (CRIU fails on this kernel).
package oci
