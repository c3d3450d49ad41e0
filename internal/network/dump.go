package network

import (
	"errors"

	"github.com/vishvananda/netlink"
)

// retryDump runs a netlink dump again while the kernel reports it
// interrupted (links or addresses changed during it, common on a busy
// host), at most 10 times; partial results are never used.
func retryDump[T any](dump func() (T, error)) (T, error) {
	v, err := dump()
	for i := 0; i < 9 && errors.Is(err, netlink.ErrDumpInterrupted); i++ {
		v, err = dump()
	}
	return v, err
}
