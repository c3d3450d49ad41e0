package api

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/telemetry"
)

// queryInt reads an optional integer query parameter within [lo, hi]; on a
// bad value it answers 400 naming the parameter.
func queryInt(w http.ResponseWriter, q url.Values, name string, lo, hi int64) (v int64, set, ok bool) {
	s := q.Get(name)
	if s == "" {
		return 0, false, true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		WriteError(w, http.StatusBadRequest, name+" must be an integer in ["+strconv.FormatInt(lo, 10)+", "+strconv.FormatInt(hi, 10)+"]")
		return 0, false, false
	}
	return v, true, true
}

// maxUnix bounds timestamps in queries (year 9999), so conversions never
// overflow.
const maxUnix = 253402300799

// window reads E2B's start and end (unix seconds) into a window; start
// after end is 400.
func window(w http.ResponseWriter, r *http.Request) (telemetry.Window, bool) {
	q := r.URL.Query()
	var win telemetry.Window
	start, hasStart, ok := queryInt(w, q, "start", 0, maxUnix)
	if !ok {
		return win, false
	}
	end, hasEnd, ok := queryInt(w, q, "end", 0, maxUnix)
	if !ok {
		return win, false
	}
	if hasStart {
		win.Start = time.Unix(start, 0)
	}
	if hasEnd {
		// end is second-precision: a sample within its second counts.
		win.End = time.Unix(end, int64(time.Second-1))
	}
	if hasStart && hasEnd && start > end {
		WriteError(w, http.StatusBadRequest, "start must not be after end")
		return win, false
	}
	return win, true
}
