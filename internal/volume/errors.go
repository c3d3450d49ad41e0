package volume

import "errors"

// Errors, wrapped with %w; internal/api maps them to statuses.
var (
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("already exists")
	ErrInvalid     = errors.New("invalid request")
	ErrInUse       = errors.New("volume in use")
	ErrQuota       = errors.New("volume quota exceeded")
	ErrNoSpace     = errors.New("volume full")
	ErrUnavailable = errors.New("volume unavailable")
)
