package oci

import "golang.org/x/sys/unix"

// The host's AIO event bound (crun, runc).
//
// fs.aio-max-nr bounds the events of every AIO context on the host together
// (65,536 by default), with no bound per user or namespace: a crun/runc
// sandbox's `user` asking io_setup for 65,536 events took them all, and
// every other io_setup on the host, host root's and other sandboxes',
// failed with EAGAIN while it held them (gVisor implements AIO itself: runsc
// sandboxes never reach the host's). Each event costs 64 bytes of ring
// pages, charged to the asking sandbox's memory cgroup, so the daemon raises
// the bound to the host's memory in such events: filling it then takes rings
// as large as the host's RAM, which the sandboxes' memory limits keep them
// from.

// aioMaxNr is the host's AIO bound (a var for tests).
var aioMaxNr = "/proc/sys/fs/aio-max-nr"

// aioEventBytes is the ring memory one event of fs.aio-nr costs (two
// 32-byte io_events: io_setup doubles what it is asked for).
const aioEventBytes = 64

// raiseHostAIO raises fs.aio-max-nr to the host's memory in AIO events
// (never lowers it).
func raiseHostAIO() error {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return err
	}
	return raiseSysctl(aioMaxNr, uint64(si.Totalram)*uint64(si.Unit)/aioEventBytes)
}
