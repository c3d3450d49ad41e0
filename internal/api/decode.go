package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxBody bounds every JSON request body.
const maxBody = 1 << 20

// decode reads exactly one JSON object into v, rejecting trailing data and
// oversized bodies. Fields v does not declare are ignored, as E2B's API does:
// the next SDK release may send a field this server does not know yet, and
// must not break every user. Fields v declares but sbx cannot honour are
// refused by the route itself, naming the field (see unsupportedFields). It
// writes the error response itself and reports whether the caller may go on.
// An empty body decodes as {}.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(r.Body)
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true
	}
	if err == nil {
		if dec.More() || dec.Decode(&struct{}{}) != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", maxBody))
		return false
	}
	WriteError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
	return false
}
