// Package fsutil is the file logic shared by the agent's Connect filesystem
// service and its HTTP /files endpoint: resolving a caller's path, building
// EntryInfo, user.e2b.* metadata xattrs, and creating directories owned by
// the caller. Errors are wrapped in the categories below so each transport
// maps them to its own codes in one place.
package fsutil

import (
	"errors"
	"fmt"
	"syscall"
)

// Error categories. Every error returned by this package wraps one of them
// (or is an unexpected internal failure).
var (
	ErrInvalid    = errors.New("invalid argument")
	ErrNotFound   = errors.New("not found")
	ErrExists     = errors.New("already exists")
	ErrPermission = errors.New("permission denied")
	ErrNoSpace    = errors.New("not enough disk space")
)

// categoryError carries a category next to the original cause, so that both
// errors.Is(err, ErrNotFound) and errors.Is(err, fs.ErrNotExist) hold.
type categoryError struct {
	cat   error
	cause error
}

func (e *categoryError) Error() string   { return e.cause.Error() }
func (e *categoryError) Unwrap() []error { return []error{e.cat, e.cause} }

// Classify wraps an OS error in its category; errors that already carry a
// category, nil, and errors with no category are returned unchanged.
func Classify(err error) error {
	if err == nil || Category(err) != nil {
		return err
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	if cat := errnoCategory(errno); cat != nil {
		return &categoryError{cat: cat, cause: err}
	}
	return err
}

func errnoCategory(e syscall.Errno) error {
	switch e {
	case syscall.ENOENT, syscall.ENOTDIR:
		return ErrNotFound
	case syscall.EEXIST, syscall.ENOTEMPTY:
		return ErrExists
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		return ErrPermission
	case syscall.ENOSPC, syscall.EDQUOT:
		return ErrNoSpace
	case syscall.ENAMETOOLONG, syscall.EINVAL, syscall.ELOOP, syscall.EISDIR, syscall.EXDEV:
		return ErrInvalid
	}
	return nil
}

// Category returns the category err belongs to, or nil.
func Category(err error) error {
	for _, c := range []error{ErrInvalid, ErrNotFound, ErrExists, ErrPermission, ErrNoSpace} {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

// invalidf returns an ErrInvalid error with a message.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
