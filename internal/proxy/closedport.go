package proxy

import (
	"encoding/json"
	"html/template"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// portClosed is E2B's answer (its proxy's port_closed error, status 502) to
// traffic for a port nothing listens on in a running sandbox: E2B's SDK
// tests read message, sandboxId and port from it; code is the status, as in
// every sbx error body.
type portClosed struct {
	SandboxID string `json:"sandboxId"`
	Message   string `json:"message"`
	Port      uint64 `json:"port"`
	Code      int    `json:"code"`
}

// portClosedMessage is E2B's proxy's message, word for word.
const portClosedMessage = "The sandbox is running but port is not open"

// browserUA matches the User-Agents E2B's proxy answers with an HTML page
// instead of JSON.
var browserUA = regexp.MustCompile(`(?i)mozilla|chrome|safari|firefox|edge|opera|msie`)

var portClosedPage = template.Must(template.New("closed").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Closed Port Error</title></head>
<body><h1>Closed Port Error</h1>
<p>The sandbox {{.SandboxID}} is running but no service is listening on port {{.Port}}.</p>
<p>Start a server on that port (on 0.0.0.0 or 127.0.0.1) and try again.</p>
</body></html>
`))

// writePortClosed answers upstream request out (whose host is the
// sandbox's upstream name, "<id>-<epoch>.sandbox:<port>") for a port that
// refused the connection: an HTML page to a browser, JSON to anything else.
func writePortClosed(w http.ResponseWriter, out *http.Request) {
	id, _, _ := strings.Cut(strings.TrimSuffix(out.URL.Hostname(), upstreamSuffix), "-")
	port, _ := strconv.ParseUint(out.URL.Port(), 10, 16)
	body := portClosed{SandboxID: id, Message: portClosedMessage, Port: port, Code: http.StatusBadGateway}
	if browserUA.MatchString(out.UserAgent()) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		_ = portClosedPage.Execute(w, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_ = json.NewEncoder(w).Encode(body)
}
