package files

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
)

// openFile opens p with flag (a file it creates gets fsutil.FileMode) and
// refuses a FIFO or a socket with fsutil.ErrInvalid. The open itself never
// blocks: it is non-blocking, so a FIFO without a peer opens (for reading)
// or fails with ENXIO (for writing; as do a socket and an absent device) at once instead of waiting for one
// forever, holding the request, the agent's thread and, for a write, the
// path's lock. Anything else is put back into blocking mode (a device
// reads and writes as usual).
func openFile(p string, flag int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(p, flag|syscall.O_NONBLOCK, fsutil.FileMode)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && pe.Err == syscall.ENXIO {
			return nil, nil, fmt.Errorf("%w: open %s: not a file (a FIFO without a reader, a socket or a device that is not there)", fsutil.ErrInvalid, p)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		err = fmt.Errorf("%w: open %s: a FIFO or socket, not a file", fsutil.ErrInvalid, p)
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = syscall.SetNonblock(int(f.Fd()), false)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
