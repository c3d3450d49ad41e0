package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/sbx-dev/sbx/internal/store"
)

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
	ErrNoSpace     = errors.New("insufficient storage")   // the daemon's disk is full; retry later
)

// storageErr adds ErrNoSpace to err when a disk-full condition caused it.
func storageErr(err error) error {
	if err != nil && !errors.Is(err, ErrNoSpace) && (errors.Is(err, store.ErrFull) || errors.Is(err, syscall.ENOSPC)) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

// templateNotFound is the error for a template reference that names no
// template (or one the caller may not see). It is an ErrNotFound, worded as
// E2B's API words it: "template '<ref>' not found".
type templateNotFound struct{ ref string }

func (e templateNotFound) Error() string        { return fmt.Sprintf("template '%s' not found", e.ref) }
func (e templateNotFound) Is(target error) bool { return target == ErrNotFound }

// TemplateNotFound returns the not-found error for the template ref (its
// first 64 bytes: a ref is the caller's input).
func TemplateNotFound(ref string) error {
	if len(ref) > 64 {
		ref = ref[:64] + "..."
	}
	return templateNotFound{ref: ref}
}

// notFound is an ErrNotFound worded as its message alone, for what is not a
// sandbox: `team "x" not found`, not `sandbox not found: team "x" not found`.
type notFound struct{ msg string }

func (e notFound) Error() string        { return e.msg }
func (e notFound) Is(target error) bool { return target == ErrNotFound }

// NotFound returns an error that is ErrNotFound (a 404 on the API), worded
// as format and a make it; callers bound what of it is the caller's input.
func NotFound(format string, a ...any) error { return notFound{msg: fmt.Sprintf(format, a...)} }
