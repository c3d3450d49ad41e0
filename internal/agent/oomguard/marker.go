package oomguard

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// MarkerAddr is the guest address of one page the guard maps and touches at
// every poll. gVisor's systrap mirrors a guest address space at the same
// addresses in its host stub process, so the host finds the agent's stub by
// this mapping (/proc/<pid>/maps) and keeps it out of the guest memory
// cgroup: the guard must run while the guest's other processes wait for
// memory (internal/runtime/oci, guestmem.go). A guest process mapping the
// same address only takes itself out of that cgroup.
const MarkerAddr = 0x5bc0_0000_0000

// marker maps the page at MarkerAddr; nil if the address is taken.
func marker() []byte {
	b, err := unix.MmapPtr(-1, 0, unsafe.Add(nil, MarkerAddr) /* not Go memory: the GC ignores it */, uintptr(unix.Getpagesize()),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		return nil
	}
	if uintptr(b) != MarkerAddr {
		_ = unix.MunmapPtr(b, uintptr(unix.Getpagesize()))
		return nil
	}
	return unsafe.Slice((*byte)(b), unix.Getpagesize())
}

// touch writes the marker page so that it is mapped in the stub (again
// after a restore, which maps pages lazily).
func touch(m []byte) {
	if m != nil {
		m[0]++
	}
}
