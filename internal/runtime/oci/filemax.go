package oci

import "math"

// The host's open-file bound (crun, runc).
//
// fs.file-max bounds the open files of the whole host (computed from its RAM
// when not set: 2,466,186 on a 24 GiB host), and every open file of a
// crun/runc sandbox counts in it: one sandbox may hold its pids limit times
// RLIMIT_NOFILE (512 × 4096, about 2.1 Mi), so two could make every host
// process without CAP_SYS_ADMIN, the other sandboxes included, fail open(2)
// with ENFILE. A file is charged to its sandbox's memory cgroup, so the
// daemon raises the bound to LONG_MAX, as systemd does at boot: memory then
// bounds open files, per sandbox. runsc sandboxes hold only the Sentry's and
// gofer's host descriptors.

// fileMax is the host's open-file bound (a var for tests).
var fileMax = "/proc/sys/fs/file-max"

// raiseHostFileMax raises fs.file-max to LONG_MAX (never lowers it).
func raiseHostFileMax() error { return raiseSysctl(fileMax, math.MaxInt64) }
