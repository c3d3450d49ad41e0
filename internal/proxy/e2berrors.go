package proxy

import (
	"encoding/json"
	"html/template"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// e2bError is the body of E2B's proxy's own answers to sandbox traffic, as
// E2B's SDK tests read them (closed_port.test.ts, host.test.ts): the
// sandbox's id, E2B's message word for word, the port where one was asked
// for, and code, the status, as in every sbx error body.
type e2bError struct {
	SandboxID string `json:"sandboxId"`
	Message   string `json:"message"`
	Port      uint64 `json:"port,omitempty"`
	Code      int    `json:"code"`
}

// E2B's proxy's messages.
const (
	portClosedMessage = "The sandbox is running but port is not open"
	notFoundMessage   = "The sandbox was not found"
)

// browserUA matches the User-Agents E2B's proxy answers with an HTML page
// instead of JSON.
var browserUA = regexp.MustCompile(`(?i)mozilla|chrome|safari|firefox|edge|opera|msie`)

// pages are the HTML answers to browsers, by message; each has the title
// E2B's page has.
var pages = map[string]*template.Template{
	portClosedMessage: page("Closed Port Error",
		`The sandbox {{.SandboxID}} is running but no service is listening on port {{.Port}}. Start a server on that port (on 0.0.0.0 or 127.0.0.1) and try again.`),
	notFoundMessage: page("Sandbox Not Found",
		`The sandbox {{.SandboxID}} was not found: it was killed, reached its timeout, or never existed.`),
}

func page(title, text string) *template.Template {
	return template.Must(template.New(title).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>` + title + `</title></head>
<body><h1>` + title + `</h1><p>` + text + `</p></body></html>
`))
}

// writeE2BError answers r with e: an HTML page to a browser, JSON to
// anything else.
func writeE2BError(w http.ResponseWriter, r *http.Request, e e2bError) {
	if p := pages[e.Message]; p != nil && browserUA.MatchString(r.UserAgent()) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(e.Code)
		_ = p.Execute(w, e)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Code)
	_ = json.NewEncoder(w).Encode(e)
}

// writePortClosed answers upstream request out (whose host is the
// sandbox's upstream name, "<id>-<epoch>.sandbox:<port>") for a port that
// refused the connection: E2B's 502.
func writePortClosed(w http.ResponseWriter, out *http.Request) {
	id, _, _ := strings.Cut(strings.TrimSuffix(out.URL.Hostname(), upstreamSuffix), "-")
	port, _ := strconv.ParseUint(out.URL.Port(), 10, 16)
	writeE2BError(w, out, e2bError{SandboxID: id, Message: portClosedMessage, Port: port, Code: http.StatusBadGateway})
}

// WriteSandboxNotFound answers traffic for sandbox id, which is gone or
// never was, as E2B's proxy does for both: 502 "The sandbox was not found"
// (the SDK's isRunning() reads 502 as not running).
func WriteSandboxNotFound(w http.ResponseWriter, r *http.Request, id string) {
	writeE2BError(w, r, e2bError{SandboxID: id, Message: notFoundMessage, Code: http.StatusBadGateway})
}
