package metrics

import "sync"

// maxTemplates caps the template label: the first maxTemplates distinct
// names get their own series, later ones count as "other".
const maxTemplates = 50

// labelCap admits at most max distinct label values.
type labelCap struct {
	mu   sync.Mutex
	max  int
	seen map[string]struct{}
}

func newLabelCap(max int) *labelCap { return &labelCap{max: max, seen: map[string]struct{}{}} }

// value returns v if it is (or can still become) one of the admitted
// values, else "other".
func (c *labelCap) value(v string) string {
	if v == "" {
		return "none"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return v
	}
	if len(c.seen) >= c.max || len(v) > 64 {
		return "other"
	}
	c.seen[v] = struct{}{}
	return v
}
