package interpreter

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestResultLine(t *testing.T) {
	tests := []struct {
		name   string
		bundle string
		main   bool
		want   string
	}{
		{"plain", `{"text/plain":"2"}`, true, `{"is_main_result":true,"text":"2","type":"result"}`},
		{"quoted", `{"text/plain":"'hi'"}`, true, `{"is_main_result":true,"text":"hi","type":"result"}`},
		{"one level only", `{"text/plain":"\"'x'\""}`, false, `{"is_main_result":false,"text":"'x'","type":"result"}`},
		{"lone quote kept", `{"text/plain":"'"}`, false, `{"is_main_result":false,"text":"'","type":"result"}`},
		{"png and html", `{"image/png":"iVBO","text/html":"<b>x</b>"}`, false,
			`{"html":"<b>x</b>","is_main_result":false,"png":"iVBO","type":"result"}`},
		{"json stays structured", `{"application/json":{"a":1}}`, true, `{"is_main_result":true,"json":{"a":1},"type":"result"}`},
		{"e2b data and chart", `{"e2b/data":{"x":[1]},"e2b/chart":{"type":"bar"}}`, true,
			`{"chart":{"type":"bar"},"data":{"x":[1]},"is_main_result":true,"type":"result"}`},
		{"other types go to extra", `{"application/vnd.custom":"v","text/latex":"$x$"}`, false,
			`{"extra":{"application/vnd.custom":"v"},"is_main_result":false,"latex":"$x$","type":"result"}`},
		{"every named type", `{"text/markdown":"m","image/svg+xml":"s","image/jpeg":"j","application/pdf":"p","application/javascript":"js"}`, false,
			`{"is_main_result":false,"javascript":"js","jpeg":"j","markdown":"m","pdf":"p","svg":"s","type":"result"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bundle map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.bundle), &bundle); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // as stream does
			if err := enc.Encode(resultLine(bundle, tt.main)); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(b.String(), "\n"); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEventLine(t *testing.T) {
	at := time.Now()
	tests := []struct {
		ev   event
		want line
	}{
		{event{Type: "error", Name: "ValueError", Value: "bad", Traceback: []string{"\x1b[0;31mline1", "line2"}},
			errorLine("ValueError", "bad", "\x1b[0;31mline1\nline2")},
		{event{Type: "count", Count: 3}, line{"type": "number_of_executions", "execution_count": 3}},
		{event{Type: "ready"}, nil},
		{event{Type: "done"}, nil},
	}
	for _, tt := range tests {
		if got := eventLine(tt.ev); !cmp.Equal(got, tt.want) {
			t.Errorf("eventLine(%+v) = %v, want %v", tt.ev, got, tt.want)
		}
	}
	l := eventLine(event{Type: "stdout", Text: "hi\n"})
	ts, err := time.Parse(time.RFC3339Nano, l["timestamp"].(string))
	if err != nil || ts.Before(at.Add(-time.Second)) || l["text"] != "hi\n" || l["type"] != "stdout" {
		t.Errorf("stdout line = %v (%v)", l, err)
	}
}

func TestNormalizeLanguage(t *testing.T) {
	tests := map[string]string{"": Python, "python": Python, "Python": Python, "js": JavaScript,
		"javascript": JavaScript, "ts": TypeScript, "typescript": TypeScript, "bash": Bash, "sh": Bash,
		"r": R, "R": R, "java": Java, "Java": Java}
	for in, want := range tests {
		if got, err := normalizeLanguage(in); got != want || err != nil {
			t.Errorf("normalizeLanguage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"cobol", "julia", "rust"} {
		if _, err := normalizeLanguage(in); !errors.Is(err, errUnsupported) || statusOf(err) != 400 {
			t.Errorf("normalizeLanguage(%q) = %v, want a 400 unsupported error", in, err)
		}
	}
}
