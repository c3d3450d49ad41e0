package telemetry

// ring is a fixed-capacity FIFO that overwrites its oldest element when full.
// It is not safe for concurrent use; Store's lock guards every ring.
type ring[T any] struct {
	buf   []T
	start int // index of the oldest element
	n     int
}

func newRing[T any](capacity int) *ring[T] {
	return &ring[T]{buf: make([]T, max(capacity, 1))}
}

// push appends v, dropping the oldest element when the ring is full.
func (r *ring[T]) push(v T) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = v
		r.n++
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
}

// len is the number of elements held.
func (r *ring[T]) len() int { return r.n }

// at returns the i-th oldest element (0 ≤ i < len).
func (r *ring[T]) at(i int) T { return r.buf[(r.start+i)%len(r.buf)] }

// last returns the newest element, if any.
func (r *ring[T]) last() (T, bool) {
	if r.n == 0 {
		var zero T
		return zero, false
	}
	return r.at(r.n - 1), true
}
