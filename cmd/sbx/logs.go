package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/sbx-dev/sbx/client"
)

// logsCmd is `sbx logs [-f] ID`: a sandbox's logs (GET
// /v2/sandboxes/{id}/logs), oldest first.
type logsCmd struct {
	Follow bool          `short:"f" help:"keep printing new entries until the sandbox is gone (or Ctrl-C)"`
	Since  time.Duration `help:"only entries newer than this (e.g. 10m)"`
	Level  logLevel      `placeholder:"LEVEL" help:"minimum level: debug, info, warn or error (default: all)"`
	Limit  int           `short:"n" default:"1000" help:"at most this many entries per request (1-1000)"`
	JSON   bool          `name:"json" help:"print each entry as a JSON line (E2B SandboxLogEntry)"`
	Poll   time.Duration `default:"1s" hidden:"" help:"how often -f asks for new entries"`
	ID     string        `arg:"" name:"id" help:"the sandbox (a killed one's logs are kept)"`
}

// logLevel is --level: one of the four levels (kong's enum would list the
// unset "" among them in the help and its error).
type logLevel string

// Decode accepts debug, info, warn or error.
func (l *logLevel) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("level", &s); err != nil {
		return err
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, s) {
		return fmt.Errorf("must be debug, info, warn or error, not %q", s)
	}
	*l = logLevel(s)
	return nil
}

func (l *logsCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	f := &logFollower{c: c, cmd: l, e: e, seen: map[string]time.Time{}}
	if l.Since > 0 {
		f.cursor = time.Now().Add(-l.Since).Truncate(time.Millisecond)
	}
	for {
		n, advanced, err := f.page()
		if err != nil {
			return sandboxError(e, l.ID, err)
		}
		if n == l.Limit && advanced {
			continue // more entries than one page
		}
		if !l.Follow {
			return 0
		}
		if done, code := f.waitMore(); done {
			return code
		}
	}
}

// logFollower prints pages of entries, each from the last it printed on.
// The cursor is a millisecond, so entries at it may come again: those
// printed are remembered (seen) until the cursor passes them.
type logFollower struct {
	c      *client.Client
	cmd    *logsCmd
	e      *env
	cursor time.Time
	seen   map[string]time.Time // printed entry → its timestamp
}

// page prints the new entries from the cursor on; n is how many the daemon
// returned and advanced whether the cursor moved.
func (f *logFollower) page() (n int, advanced bool, err error) {
	es, err := f.c.Logs(f.e.ctx, f.cmd.ID, client.LogsOptions{Cursor: f.cursor, Limit: f.cmd.Limit,
		Direction: "forward", Level: string(f.cmd.Level)})
	if err != nil {
		return 0, false, err
	}
	start := f.cursor
	for _, le := range es {
		key := le.Timestamp.Format(time.RFC3339Nano) + "\x00" + le.Message
		if _, dup := f.seen[key]; dup || le.Timestamp.Before(start) {
			continue
		}
		f.print(le)
		f.seen[key] = le.Timestamp
		if ms := le.Timestamp.Truncate(time.Millisecond); ms.After(f.cursor) {
			f.cursor = ms
		}
	}
	for k, ts := range f.seen {
		if ts.Before(f.cursor) {
			delete(f.seen, k)
		}
	}
	return len(es), f.cursor.After(start), nil
}

func (f *logFollower) print(le client.LogEntry) {
	if f.cmd.JSON {
		b, _ := json.Marshal(le)
		fmt.Fprintf(f.e.std.out, "%s\n", b)
		return
	}
	fmt.Fprintf(f.e.std.out, "%s %-5s %s%s\n", le.Timestamp.Local().Format(time.RFC3339Nano), cellText(le.Level), cellText(le.Message), fieldsText(le.Fields))
}

// fieldsText is " k=v ..." of an entry's fields, sorted, values quoted
// (they come from the sandbox: no control character reaches the terminal).
func fieldsText(f map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(f)) {
		fmt.Fprintf(&b, " %s=%s", strconv.QuoteToASCII(k), strconv.QuoteToASCII(f[k]))
	}
	return b.String()
}

// waitMore sleeps one poll interval; done is true (with the exit code) once
// the sandbox is gone, after a last page, or on Ctrl-C.
func (f *logFollower) waitMore() (done bool, code int) {
	select {
	case <-f.e.ctx.Done():
		return true, 0
	case <-time.After(f.cmd.Poll):
	}
	_, err := f.c.Get(f.e.ctx, f.cmd.ID)
	switch {
	case errors.Is(err, client.ErrNotFound):
		if _, _, err := f.page(); err != nil && !errors.Is(err, context.Canceled) {
			return true, sandboxError(f.e, f.cmd.ID, err)
		}
		return true, 0
	case err != nil && f.e.ctx.Err() != nil:
		return true, 0
	}
	return false, 0
}
