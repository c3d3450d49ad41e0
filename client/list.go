package client

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ListOptions filters List. Zero fields do not filter.
type ListOptions struct {
	Metadata     map[string]string // all pairs must match
	State        []string          // "running", "paused"
	Template     string            // template ID or alias
	StartedAfter time.Time
	Order        string // "asc" or "desc" (default, newest first)
	Limit        int    // page size, 1-100; List still follows every page
}

// maxPages bounds List so a server that never stops paging cannot hang it.
const maxPages = 10000

// List returns all sandboxes matching opts (GET /v2/sandboxes), following
// the X-Next-Token pagination to the end.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]ListedSandbox, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	all := []ListedSandbox{}
	seen := map[string]bool{}
	for token := ""; len(seen) < maxPages; {
		var page []ListedSandbox
		path := "/v2/sandboxes"
		if q := opts.query(token); q != "" {
			path += "?" + q
		}
		h, err := c.do(ctx, http.MethodGet, path, nil, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if token = h.Get("X-Next-Token"); token == "" {
			return all, nil
		}
		if seen[token] {
			return nil, fmt.Errorf("list: server repeated page token %q", token)
		}
		seen[token] = true
	}
	return nil, fmt.Errorf("list: more than %d pages", maxPages)
}

func (o ListOptions) validate() error {
	for _, s := range o.State {
		if s != "running" && s != "paused" {
			return fmt.Errorf("%w: state %q (want running or paused)", ErrBadRequest, s)
		}
	}
	if o.Order != "" && o.Order != "asc" && o.Order != "desc" {
		return fmt.Errorf("%w: order %q (want asc or desc)", ErrBadRequest, o.Order)
	}
	if o.Limit < 0 || o.Limit > 100 {
		return fmt.Errorf("%w: limit %d (want 1-100)", ErrBadRequest, o.Limit)
	}
	return nil
}

// query encodes o like the E2B JS SDK (openapi-fetch: each value through
// encodeURIComponent, arrays comma-joined), plus the page token.
func (o ListOptions) query(token string) string {
	var q []string
	add := func(k, v string) { q = append(q, k+"="+encodeURIComponent(v)) }
	if o.Limit > 0 {
		add("limit", strconv.Itoa(o.Limit))
	}
	if token != "" {
		add("nextToken", token)
	}
	if len(o.State) > 0 {
		add("state", strings.Join(o.State, ","))
	}
	if len(o.Metadata) > 0 {
		add("metadata", metadataFilter(o.Metadata))
	}
	if !o.StartedAfter.IsZero() {
		add("startedAfter", o.StartedAfter.UTC().Format(time.RFC3339Nano))
	}
	if o.Template != "" {
		add("template", o.Template)
	}
	if o.Order != "" {
		add("order", o.Order)
	}
	return strings.Join(q, "&")
}

// metadataFilter is the SDK's inner encoding of the metadata filter:
// new URLSearchParams({[encodeURIComponent(k)]: encodeURIComponent(v)}).
// The query adds one more encodeURIComponent, so {a: "b c"} goes on the wire
// as metadata=a%3Db%252520c. Keys are sorted for a stable request.
func metadataFilter(md map[string]string) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = formEncode(encodeURIComponent(k)) + "=" + formEncode(encodeURIComponent(md[k]))
	}
	return strings.Join(pairs, "&")
}

// encodeURIComponent is JavaScript's: it keeps A-Z a-z 0-9 - _ . ! ~ * ' ( ).
func encodeURIComponent(s string) string { return percentEncode(s, "-_.!~*'()", false) }

// formEncode is WHATWG application/x-www-form-urlencoded (URLSearchParams):
// it keeps A-Z a-z 0-9 * - . _ and turns space into "+".
func formEncode(s string) string { return percentEncode(s, "*-._", true) }

func percentEncode(s, keep string, spacePlus bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9', strings.IndexByte(keep, ch) >= 0:
			b.WriteByte(ch)
		case ch == ' ' && spacePlus:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[ch>>4])
			b.WriteByte(hex[ch&15])
		}
	}
	return b.String()
}
