package sandbox

import "errors"

// Error kinds of the manager. Callers test them with errors.Is; the API layer
// turns them into HTTP statuses in one place.
var (
	ErrNotFound    = errors.New("sandbox not found")
	ErrInvalid     = errors.New("invalid request")
	ErrConflict    = errors.New("conflict")
	ErrUnavailable = errors.New("unavailable")       // a runtime or template cannot be used now
	ErrBusy        = errors.New("too many requests") // admission control; retry later
	ErrNotImpl     = errors.New("not supported")
	ErrQuota       = errors.New("storage quota exceeded") // paused images and snapshots
)
