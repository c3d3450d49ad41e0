package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// Sentinel errors. Errors returned by the client match them with errors.Is
// according to the HTTP status (lifecycle API, /files) or the Connect code
// (processes, filesystem).
var (
	ErrBadRequest   = errors.New("bad request")          // 400, invalid_argument
	ErrUnauthorized = errors.New("unauthorized")         // 401, unauthenticated
	ErrForbidden    = errors.New("forbidden")            // 403, permission_denied
	ErrNotFound     = errors.New("not found")            // 404, not_found
	ErrConflict     = errors.New("conflict")             // 409, already_exists
	ErrRateLimited  = errors.New("rate limited")         // 429, resource_exhausted
	ErrNotSupported = errors.New("not supported")        // 501, unimplemented
	ErrUnavailable  = errors.New("unavailable")          // 502, 503, unavailable
	ErrTimeout      = errors.New("timeout")              // 504, deadline_exceeded
	ErrInsufficient = errors.New("insufficient storage") // 507
	// ErrSessionEnded: a started command's stream was cut without the
	// daemon saying why, which is what a sandbox killed, timed out or
	// paused under a running command looks like. The transport error stays
	// wrapped.
	ErrSessionEnded = errors.New("the sandbox's session ended (the sandbox was killed, timed out or paused)")
)

var statusErrs = map[int]error{
	400: ErrBadRequest, 401: ErrUnauthorized, 403: ErrForbidden, 404: ErrNotFound,
	409: ErrConflict, 429: ErrRateLimited, 501: ErrNotSupported, 502: ErrUnavailable,
	503: ErrUnavailable, 504: ErrTimeout, 507: ErrInsufficient,
}

// APIError is an error response of the daemon: E2B's {code, message} body.
// Status is the HTTP status; Code the body's code (equal to Status on sbx).
type APIError struct {
	Status  int
	Code    int
	Message string
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is reports whether target is the sentinel error of e's status.
func (e *APIError) Is(target error) bool {
	s, ok := statusErrs[e.Status]
	return ok && s == target
}

// parseAPIError reads an error response. A body that is not {code, message}
// becomes the message (trimmed), so proxies' plain-text errors still show.
func parseAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode}
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil && (body.Code != 0 || body.Message != "") {
		e.Code, e.Message = body.Code, body.Message
	} else {
		e.Message = strings.TrimSpace(string(raw))
	}
	return e
}

var connectErrs = map[connect.Code]error{
	connect.CodeInvalidArgument: ErrBadRequest, connect.CodeUnauthenticated: ErrUnauthorized,
	connect.CodePermissionDenied: ErrForbidden, connect.CodeNotFound: ErrNotFound,
	connect.CodeAlreadyExists: ErrConflict, connect.CodeResourceExhausted: ErrRateLimited,
	connect.CodeUnimplemented: ErrNotSupported, connect.CodeUnavailable: ErrUnavailable,
	connect.CodeDeadlineExceeded: ErrTimeout,
}

// rpcErr makes a Connect error match the package's sentinels while keeping
// the *connect.Error reachable with errors.As.
func rpcErr(err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae // the proxy's own answer, not envd's
	}
	if s, ok := connectErrs[connect.CodeOf(err)]; ok {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

// retryAfter reports whether resp is a 429 with an integer-seconds
// Retry-After, the only case the E2B SDK retries.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || n < 0 || n > 60 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
