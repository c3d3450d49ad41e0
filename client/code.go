package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// CodePort is the code interpreter's port inside a sandbox.
const CodePort = 49999

// CodeRequest is one cell for the code interpreter.
type CodeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id,omitempty"`
	Language  string            `json:"language,omitempty"`
	EnvVars   map[string]string `json:"env_vars,omitempty"`
	// MaxOutput, if > 0, bounds the bytes of the stream read: past it the
	// stream is closed and the result so far has Truncated set (the
	// sandbox chooses how much a cell prints).
	MaxOutput int `json:"-"`
}

// CodeResult collects the NDJSON stream of one execution.
type CodeResult struct {
	Stdout, Stderr string
	Results        []map[string]any // "result" lines (text, html, png ...)
	Error          *CodeError
	ExecutionCount int
	Truncated      bool // the stream was cut at CodeRequest.MaxOutput
}

// CodeError is an exception raised by the cell.
type CodeError struct {
	Name, Value, Traceback string
}

// Text returns the main result's text/plain, if any.
func (r *CodeResult) Text() string {
	for _, res := range r.Results {
		if main, _ := res["is_main_result"].(bool); main {
			s, _ := res["text"].(string)
			return s
		}
	}
	return ""
}

// PNGs returns the decoded PNG images among the results.
func (r *CodeResult) PNGs() [][]byte {
	var out [][]byte
	for _, res := range r.Results {
		if s, ok := res["png"].(string); ok {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// RunCode executes a cell in the sandbox's code interpreter (template
// code-interpreter-v1) and waits for the end of its NDJSON stream.
func (s *SandboxConn) RunCode(ctx context.Context, req CodeRequest) (*CodeResult, error) {
	body, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL+"/execute", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("E2b-Sandbox-Port", strconv.Itoa(CodePort))
	resp, err := s.http.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &APIError{Status: resp.StatusCode, Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
	}
	if req.MaxOutput <= 0 {
		return readCodeStream(resp.Body)
	}
	lr := &io.LimitedReader{R: resp.Body, N: int64(req.MaxOutput)}
	res, err := readCodeStream(lr)
	if lr.N <= 0 {
		res.Truncated, err = true, nil
	}
	return res, err
}

func readCodeStream(r io.Reader) (*CodeResult, error) {
	res := &CodeResult{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return res, fmt.Errorf("code interpreter: bad stream line: %w", err)
		}
		res.add(line)
	}
	return res, sc.Err()
}

func (r *CodeResult) add(line map[string]any) {
	str := func(k string) string { s, _ := line[k].(string); return s }
	switch str("type") {
	case "stdout":
		r.Stdout += str("text")
	case "stderr":
		r.Stderr += str("text")
	case "result":
		r.Results = append(r.Results, line)
	case "error":
		r.Error = &CodeError{Name: str("name"), Value: str("value"), Traceback: str("traceback")}
	case "number_of_executions":
		n, _ := line["execution_count"].(float64)
		r.ExecutionCount = int(n)
	}
}
