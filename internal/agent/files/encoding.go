package files

import (
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

type coding struct {
	name string
	q    float64
}

// parseCoding splits "gzip;q=0.5" into a lowercased name and its quality.
func parseCoding(v string) coding {
	name, params, _ := strings.Cut(v, ";")
	c := coding{name: strings.ToLower(strings.TrimSpace(name)), q: 1}
	for _, p := range strings.Split(params, ";") {
		p = strings.TrimSpace(p)
		if len(p) > 2 && strings.EqualFold(p[:2], "q=") {
			if q, err := strconv.ParseFloat(p[2:], 64); err == nil {
				c.q = q
			}
		}
	}
	return c
}

// acceptEncoding picks "gzip" or "" (identity) from Accept-Encoding, as envd
// does (RFC 9110: identity is acceptable unless refused with q=0). When
// nothing acceptable is left it fails with 406.
func acceptEncoding(r *http.Request) (string, error) {
	h := r.Header.Get("Accept-Encoding")
	if h == "" {
		return "", nil
	}
	var cs []coding
	identityRefused := false
	for _, v := range strings.Split(h, ",") {
		c := parseCoding(v)
		cs = append(cs, c)
		identityRefused = identityRefused || (c.name == "identity" && c.q == 0)
	}
	slices.SortStableFunc(cs, func(a, b coding) int { return cmp.Compare(b.q, a.q) })
	for _, c := range cs {
		switch {
		case c.q == 0:
		case c.name == "identity":
			return "", nil
		case c.name == "*" && identityRefused, c.name == "gzip":
			return "gzip", nil
		case c.name == "*":
			return "", nil
		}
	}
	if !identityRefused {
		return "", nil
	}
	return "", withStatus(http.StatusNotAcceptable, errors.New("no acceptable encoding found, supported: [gzip]"))
}

// decodedBody returns the request body with its Content-Encoding (gzip or
// identity) removed; other encodings are 400. The caller closes the result.
func decodedBody(r *http.Request) (io.ReadCloser, error) {
	enc := parseCoding(r.Header.Get("Content-Encoding")).name
	switch enc {
	case "", "identity":
		return r.Body, nil
	case "gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, withStatus(http.StatusBadRequest, fmt.Errorf("reading gzip body: %w", err))
		}
		return gz, nil
	}
	return nil, withStatus(http.StatusBadRequest, fmt.Errorf("unsupported Content-Encoding: %s, supported: [gzip]", enc))
}
