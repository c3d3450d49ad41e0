package oci

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Shared per-user rlimits of user-namespace sandboxes (crun, runc).
//
// The kernel counts queued signals (RLIMIT_SIGPENDING: every pending
// real-time signal and every POSIX timer) and POSIX message queue bytes
// (RLIMIT_MSGQUEUE) per user at every level of user namespaces: a sandbox's
// in its own namespace and again in the host's, charged to the namespace's
// owner, host root, against the limit its creator (the runtime binary) had
// when it made the namespace. Host root's own processes count in that same
// bucket against theirs. So with the runtime holding host root's limits, a
// sandbox's `user` queueing signals to itself took host root's whole
// allowance (96,365 here): every host root process's sigqueue and
// timer_create failed with EAGAIN, and a mq_open after 9 queues of 80 KiB.
//
// The daemon's soft limits, which the runtime binaries inherit, are lowered
// to half their hard limit (unlimited ones are left): the sandboxes
// together then stop at that half, and host root keeps the other.
var halveOnce sync.Once

// sharedRlimits are the limits the kernel counts in host root's bucket.
var sharedRlimits = map[string]int{"RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE}

// halveSharedRlimits lowers this process's soft sharedRlimits to half their
// hard limits, once.
func halveSharedRlimits() (err error) {
	halveOnce.Do(func() {
		for name, res := range sharedRlimits {
			if e := halveSoft(res); e != nil && err == nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

// halveSoft sets resource res's soft limit to half its hard limit unless
// that is unlimited or the soft limit is already lower.
func halveSoft(res int) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(res, &lim); err != nil {
		return err
	}
	if lim.Max == unix.RLIM_INFINITY || lim.Cur <= lim.Max/2 {
		return nil
	}
	lim.Cur = lim.Max / 2
	return unix.Setrlimit(res, &lim)
}
