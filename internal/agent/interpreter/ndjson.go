package interpreter

import (
	"encoding/json"
	"strings"
	"time"
)

// line is one NDJSON line of /execute (contract §4). Fields are omitted
// when empty, like the E2B server's model_dump(exclude_none=True).
type line map[string]any

func streamLine(typ, text string, at time.Time) line {
	return line{"type": typ, "text": text, "timestamp": at.UTC().Format(time.RFC3339Nano)}
}

func errorLine(name, value, traceback string) line {
	return line{"type": "error", "name": name, "value": value, "traceback": traceback}
}

func countLine(n int) line { return line{"type": "number_of_executions", "execution_count": n} }

var (
	keepaliveLine = line{"type": "keepalive"}
	endLine       = line{"type": "end_of_execution"}
)

// mimeFields maps Jupyter MIME types to result fields; others go to extra.
var mimeFields = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
	"e2b/data":               "data",
	"e2b/chart":              "chart",
}

// resultLine converts a Jupyter MIME bundle to a result line.
func resultLine(bundle map[string]json.RawMessage, main bool) line {
	l := line{"type": "result", "is_main_result": main}
	extra := map[string]json.RawMessage{}
	for mime, raw := range bundle {
		field, ok := mimeFields[mime]
		if !ok {
			extra[mime] = raw
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			l[field] = raw // structured: json, data, chart
			continue
		}
		if field == "text" {
			s = stripQuotes(s)
		}
		l[field] = s
	}
	if len(extra) > 0 {
		l["extra"] = extra
	}
	return l
}

// stripQuotes removes one level of surrounding quotes, as Python reprs of
// strings have ('abc' → abc).
func stripQuotes(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// joinTraceback joins a kernel's traceback lines (ANSI kept).
func joinTraceback(tb []string) string { return strings.Join(tb, "\n") }
