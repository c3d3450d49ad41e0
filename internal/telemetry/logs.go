package telemetry

import (
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sbx-dev/sbx/internal/untrusted"
)

// Level is a log entry's severity, E2B's LogLevel.
type Level int

// Levels in increasing severity.
const (
	Debug Level = iota
	Info
	Warn
	Error
)

var levelNames = [...]string{"debug", "info", "warn", "error"}

func (l Level) String() string { return levelNames[l] }

// ParseLevel reads a level name (case-insensitive; "warning" too).
func ParseLevel(s string) (Level, bool) {
	s = strings.ToLower(s)
	if s == "warning" {
		return Warn, true
	}
	for i, n := range levelNames {
		if s == n {
			return Level(i), true
		}
	}
	return Info, false
}

// Bounds of one entry: anything longer is cut (sandbox content is hostile).
const (
	MaxMessage = 1024
	MaxFields  = 8
	MaxField   = 128 // bytes per field key and per field value
)

// Entry is one log line of a sandbox.
type Entry struct {
	Time    time.Time
	Level   Level
	Logger  string // who wrote it: "lifecycle", "processSvc", "agent"
	Message string
	Fields  map[string]string
}

// clean returns e with every string bounded and valid UTF-8, and at most
// MaxFields fields (the ones with the smallest keys kept, for determinism).
func (e Entry) clean() Entry {
	e.Logger = clip(e.Logger, MaxField)
	e.Message = clip(e.Message, MaxMessage)
	f := make(map[string]string, min(len(e.Fields), MaxFields))
	for _, k := range sortedKeys(e.Fields) {
		if len(f) == MaxFields {
			break
		}
		if ck := clip(k, MaxField); ck != "" {
			f[ck] = clip(e.Fields[k], MaxField)
		}
	}
	e.Fields = f
	return e
}

// clip cuts s to at most n bytes on a rune boundary, replaces invalid
// UTF-8 and control characters (no terminal escapes or fake line breaks
// from a sandbox reach a reader's screen), so a record is always one clean
// line of text.
func clip(s string, n int) string {
	s, _ = untrusted.Cut(untrusted.Text(s, "", utf8.RuneError), n)
	return s
}

// LogQuery selects entries: E2B's v2 query (cursor, direction, level, limit,
// search) and v1's start; zero fields select everything.
type LogQuery struct {
	Cursor   time.Time // forward: entries at or after it; backward: at or before it
	Backward bool      // newest first
	MinLevel Level
	Search   string // case-sensitive substring of the message
	Limit    int    // 0 = no limit
}

func (q LogQuery) match(e Entry) bool {
	if e.Level < q.MinLevel || (q.Search != "" && !strings.Contains(e.Message, q.Search)) {
		return false
	}
	if q.Cursor.IsZero() {
		return true
	}
	if q.Backward {
		return !e.Time.After(q.Cursor)
	}
	return !e.Time.Before(q.Cursor)
}

// query returns the matching entries of r by time, oldest first or
// (Backward) newest first, at most Limit of them. Entries reach the ring
// nearly in time order (an agent's arrive up to a Step late), so they are
// sorted here.
func (q LogQuery) query(r *ring[Entry]) []Entry {
	out := []Entry{}
	for i := range r.len() {
		if e := r.at(i); q.match(e) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if q.Backward {
		slices.Reverse(out)
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}
