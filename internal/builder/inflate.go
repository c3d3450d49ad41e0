package builder

import (
	"context"
	"fmt"
	"io"
)

// A COPY's upload is inflated in the daemon, outside any sandbox's cgroup:
// a gzip bomb (deflate reaches ~1000:1, so 512 MiB of upload is ~500 GiB
// of zeros, minutes of a core to inflate) must fail fast. The tar the
// upload holds is bounded as an uncompressed upload is (Upload's
// MaxUploadBytes), with room for its headers and entries the COPY does not
// take (inflateSlack), and every read stops with the build's context.

// inflateSlack is how far past the upload bound the inflated tar may go:
// tar headers, padding and the entries the COPY skips.
const inflateSlack = 2

// errInflatedTooLarge is the error of an upload whose tar inflates past
// its bound.
type errInflatedTooLarge struct{ limit int64 }

func (e errInflatedTooLarge) Error() string {
	return fmt.Sprintf("uploaded files inflate to more than %d bytes (the bound of a gzip-compressed COPY upload: %d times the upload limit)", e.limit, inflateSlack)
}

// boundedReader reads r until limit bytes came through it (then it fails
// with errInflatedTooLarge) or ctx ends (ctx's error).
type boundedReader struct {
	ctx   context.Context
	r     io.Reader
	limit int64
	n     int64
}

// Read implements io.Reader.
func (b *boundedReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if b.n >= b.limit {
		// One byte more tells a tar that ends at the bound from one past it.
		var one [1]byte
		if k, _ := io.ReadFull(b.r, one[:]); k > 0 {
			return 0, errInflatedTooLarge{b.limit}
		}
		return 0, io.EOF
	}
	if rest := b.limit - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := b.r.Read(p)
	b.n += int64(k)
	return k, err
}
