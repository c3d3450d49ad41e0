package main

import (
	"errors"
	"net"
	"net/http"

	"connectrpc.com/connect"

	"github.com/sbx-dev/sbx/client"
)

// explain words an error of the client for a person at a terminal: a daemon
// that cannot be reached or a refused API key say what to do; an error the
// daemon answered is its status and message (not the request line); an
// error of a sandbox's RPC is its message alone (not the chain of codes); a
// command's stream cut under it says the sandbox's session ended.
func explain(err error) string {
	var op *net.OpError
	var ae *client.APIError
	var ce *connect.Error
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return "cannot reach the sbx daemon (" + op.Error() + "): is `sbx serve` running there? " +
			"Set --url or SBX_URL to its address"
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return "the daemon refused the API key (" + ae.Message + "): set --api-key or SBX_API_KEY " +
			"to a key of this daemon (printed at its first start)"
	case errors.As(err, &ae):
		return ae.Error()
	case errors.Is(err, client.ErrSessionEnded):
		return client.ErrSessionEnded.Error() // not the transport's "incomplete envelope"
	case errors.As(err, &ce):
		return ce.Message()
	}
	return err.Error()
}

// explained replaces the errors among a by their explanation, for errorf.
func explained(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		if err, ok := v.(error); ok {
			v = explain(err)
		}
		out[i] = v
	}
	return out
}
