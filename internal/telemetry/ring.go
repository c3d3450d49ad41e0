package telemetry

// ring is a FIFO of bounded capacity that overwrites its oldest element when
// full. Its buffer grows with what it holds, up to the capacity, instead of
// being made whole up front: every sandbox has two (1,440 samples and 1,000
// log entries, ≈ 190 KiB zeroed), and most sandboxes end long before either
// fills, so a create no longer pays for them. It is not safe for concurrent
// use; Store's lock guards every ring.
type ring[T any] struct {
	buf   []T // the elements held: grows until it holds limit
	limit int
	start int // index of the oldest element (0 until full)
}

func newRing[T any](capacity int) *ring[T] {
	return &ring[T]{limit: max(capacity, 1)}
}

// push appends v, dropping the oldest element when the ring is full.
func (r *ring[T]) push(v T) {
	if len(r.buf) < r.limit {
		if len(r.buf) == cap(r.buf) { // grow, never past the limit
			nb := make([]T, len(r.buf), min(max(2*cap(r.buf), 8), r.limit))
			copy(nb, r.buf)
			r.buf = nb
		}
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
}

// len is the number of elements held.
func (r *ring[T]) len() int { return len(r.buf) }

// at returns the i-th oldest element (0 ≤ i < len).
func (r *ring[T]) at(i int) T { return r.buf[(r.start+i)%len(r.buf)] }

// last returns the newest element, if any.
func (r *ring[T]) last() (T, bool) {
	if len(r.buf) == 0 {
		var zero T
		return zero, false
	}
	return r.at(len(r.buf) - 1), true
}
