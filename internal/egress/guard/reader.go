package guard

import "fmt"

// reader consumes a byte slice front to back. The first short read sets err
// (wrapping ErrMalformed) and every later call then returns zero values, so
// a parser can read a whole structure and check err once.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: truncated (need %d bytes, have %d)", ErrMalformed, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n int) { r.take(n) }

func (r *reader) byte() byte {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) uint16() uint16 {
	if v := r.take(2); v != nil {
		return uint16(v[0])<<8 | uint16(v[1])
	}
	return 0
}

// vector reads a length-prefixed vector whose length field is lenBytes (1
// or 2) long and whose length must not exceed maxLen.
func (r *reader) vector(lenBytes, maxLen int) []byte {
	var n int
	if lenBytes == 1 {
		n = int(r.byte())
	} else {
		n = int(r.uint16())
	}
	if r.err == nil && n > maxLen {
		r.err = fmt.Errorf("%w: vector of %d bytes, at most %d", ErrMalformed, n, maxLen)
	}
	return r.take(n)
}
