package network

import "sync"

// rtnlMu serialises this process's network setups: the part of each that
// takes the kernel's RTNL lock (the netns, the veth pair, its sysctls,
// addresses and routes).
//
// The kernel serialises these on RTNL anyway, so the lock costs little
// parallelism. What it removes is a spin: writing a sysctl such as
// ipv6/conf/all/disable_ipv6 or ipv4/conf/<if>/forwarding does not wait for
// RTNL but tries it and, if it is taken, restarts the write system call at
// once (rtnl_trylock, restart_syscall), burning a CPU for as long as the
// holder keeps it — across an RCU grace period when a link moves or goes.
// In a burst of 100 creates the concurrent setups of one daemon spun ≈ 2–4
// ms of CPU per create this way (perf, docs/BENCHMARKS.md); behind this
// lock a setup's writes meet RTNL held only by other processes or the
// kernel's own work (a dying netns's cleanup).
//
// Lock order: a sandbox's id lock (idLocks), then rtnlMu; nothing is
// locked under it.
var rtnlMu sync.Mutex
