package layer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// A golden is what mkfs.ext4 writes for one (size, inodes): the data
// extents of a fresh image, a few hundred KiB whatever the size (the rest
// is holes). makeImage writes them into a new sparse file instead of
// running mkfs each time: no fork, no fsync, a handful of writes to the
// host's page cache. Every image of a size is then the same file system,
// UUID included, which nothing relies on being unique (a layer is only
// ever mounted by the loop device it was made for).
type golden struct {
	once    sync.Once
	extents []extent
	err     error
}

type extent struct {
	off  int64
	data []byte
}

type goldenKey struct {
	size   int64
	inodes uint64
}

// goldens caches the goldens of the last maxGoldens sizes used (a request
// may ask for any disk size: the cache must not grow with them).
var goldens struct {
	sync.Mutex
	m     map[goldenKey]*golden
	order []goldenKey
}

const maxGoldens = 8

// goldenFor returns the golden of opts's image, making it with mkfs.ext4 in
// a scratch file next to opts.Image the first time.
func goldenFor(ctx context.Context, opts Options) ([]extent, error) {
	k := goldenKey{imageSize(opts), opts.Inodes}
	goldens.Lock()
	g := goldens.m[k]
	if g == nil {
		if goldens.m == nil {
			goldens.m = map[goldenKey]*golden{}
		}
		g = &golden{}
		goldens.m[k], goldens.order = g, append(goldens.order, k)
		if len(goldens.order) > maxGoldens {
			delete(goldens.m, goldens.order[0])
			goldens.order = goldens.order[1:]
		}
	}
	goldens.Unlock()
	g.once.Do(func() { g.extents, g.err = makeGolden(ctx, opts, k.size) })
	if g.err != nil {
		goldens.Lock()
		if goldens.m[k] == g {
			delete(goldens.m, k) // the next create tries again
		}
		goldens.Unlock()
	}
	return g.extents, g.err
}

// makeGolden runs mkfs.ext4 on a scratch sparse file of size and reads
// back its data extents.
func makeGolden(ctx context.Context, opts Options, size int64) ([]extent, error) {
	f, err := os.CreateTemp(filepath.Dir(opts.Image), ".golden-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return nil, err
	}
	if err := mkfs(ctx, f.Name(), opts.Inodes); err != nil {
		return nil, err
	}
	return dataExtents(f, size)
}

// dataExtents reads the parts of f (of size) that are not holes.
func dataExtents(f *os.File, size int64) ([]extent, error) {
	var out []extent
	for off := int64(0); off < size; {
		start, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only holes from off on
		}
		if err != nil {
			return nil, fmt.Errorf("golden image: %w", err)
		}
		end, err := unix.Seek(int(f.Fd()), start, unix.SEEK_HOLE)
		if err != nil {
			return nil, fmt.Errorf("golden image: %w", err)
		}
		data := make([]byte, end-start)
		if _, err := f.ReadAt(data, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("golden image: %w", err)
		}
		out, off = append(out, extent{start, data}), end
	}
	return out, nil
}

// writeExtents writes a golden's extents into f.
func writeExtents(f *os.File, extents []extent) error {
	for _, e := range extents {
		if _, err := f.WriteAt(e.data, e.off); err != nil {
			return err
		}
	}
	return nil
}
