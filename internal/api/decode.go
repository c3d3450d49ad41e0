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

// decode reads exactly one JSON object into v, rejecting unknown fields,
// trailing data and oversized bodies. It writes the error response itself and
// reports whether the caller may go on. An empty body decodes as {}.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeBody(w, r, v, true)
}

// decodeLenient is decode ignoring fields sbx does not know (the template
// routes: the next SDK release may add some).
func decodeLenient(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeBody(w, r, v, false)
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any, strict bool) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
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
