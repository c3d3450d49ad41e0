package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/websocket"

	"github.com/sbx-dev/sbx/client"
)

// termMsg is a message from the browser's terminal: first "hello" (the
// CSRF token and the size), then "input" and "resize".
type termMsg struct {
	Type string `json:"type"`
	CSRF string `json:"csrf,omitempty"`
	Data string `json:"data,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
}

// terminal runs a login shell on a pseudo-terminal in the sandbox {id}
// (the agent's process RPC with a PTY, as `sbx shell` does) and bridges it
// to a WebSocket: output as binary frames, a text frame {"type":"exit",
// "code":N} at the end. The handshake must come from the dashboard's
// origin with the session cookie, and the first message must carry the
// session's CSRF token. The shell is killed when the socket closes.
func (s *Server) terminal(w http.ResponseWriter, r *http.Request) {
	if msg := crossOrigin(r); msg != "" {
		writeError(w, http.StatusForbidden, msg)
		return
	}
	sc, ok := s.conn(w, r)
	if !ok {
		return
	}
	sess := sessionOf(r)
	websocket.Server{
		Handshake: func(*websocket.Config, *http.Request) error { return nil }, // Origin checked above
		Handler:   func(ws *websocket.Conn) { s.runTerminal(ws, sc, sess) },
	}.ServeHTTP(w, r)
}

func (s *Server) runTerminal(ws *websocket.Conn, sc *client.SandboxConn, sess session) {
	defer ws.Close()
	ws.MaxPayloadBytes = 64 << 10
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hello termMsg
	if err := websocket.JSON.Receive(ws, &hello); err != nil || hello.Type != "hello" || !validCSRF(sess, hello.CSRF) {
		_ = websocket.JSON.Send(ws, map[string]string{"type": "error", "message": "missing or wrong CSRF token"})
		return
	}
	_ = ws.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithCancelCause(ws.Request().Context())
	defer cancel(nil)
	stdin, feed := io.Pipe()
	resize := make(chan client.TermSize, 4)
	go func() { // browser → shell; a closed socket ends the shell
		defer cancel(nil)
		defer feed.Close()
		readTerminal(ws, feed, resize)
	}()
	ended := make(chan struct{})
	go s.watchSession(ws.Request(), ended, cancel)
	defer close(ended)
	out := &frameWriter{ws: ws}
	tty := &client.TTY{Size: termSize(hello), Resize: resize}
	code, err := sc.Run(ctx, client.RunRequest{Argv: []string{"/bin/bash", "-l"}, TTY: tty, Stdin: stdin}, out, out)
	end := map[string]any{"type": "exit", "code": code}
	switch {
	case context.Cause(ctx) == errSessionEnded:
		end = map[string]any{"type": "error", "message": errSessionEnded.Error()}
	case err != nil && ctx.Err() == nil:
		end = map[string]any{"type": "error", "message": err.Error()}
	}
	out.sendJSON(end)
}

// errSessionEnded ends a terminal whose session was signed out, expired or
// whose key was revoked.
var errSessionEnded = errors.New("the session ended")

// sessionCheck is how often an open terminal re-checks its session.
var sessionCheck = 2 * time.Second

// watchSession cancels a terminal once the session of the request that
// opened it is gone (sign-out, expiry, revoked key), so that no shell
// outlives the session that started it by more than sessionCheck. An open
// terminal alone does not keep its session from going idle.
func (s *Server) watchSession(r *http.Request, ended <-chan struct{}, cancel context.CancelCauseFunc) {
	t := time.NewTicker(sessionCheck)
	defer t.Stop()
	for {
		select {
		case <-ended:
			return
		case <-t.C:
			if _, ok := s.session(r, false); !ok {
				cancel(errSessionEnded)
				return
			}
		}
	}
}

// readTerminal applies the browser's messages until the socket ends.
func readTerminal(ws *websocket.Conn, feed io.Writer, resize chan<- client.TermSize) {
	for {
		var m termMsg
		if err := websocket.JSON.Receive(ws, &m); err != nil {
			return
		}
		switch m.Type {
		case "input":
			if _, err := io.WriteString(feed, m.Data); err != nil {
				return
			}
		case "resize":
			select {
			case resize <- termSize(m):
			default: // a burst of resizes: the last ones win soon enough
			}
		}
	}
}

func termSize(m termMsg) client.TermSize {
	c, r := min(max(m.Cols, 2), 1000), min(max(m.Rows, 2), 1000)
	return client.TermSize{Cols: c, Rows: r}
}

// frameWriter sends each write as one binary frame; mu serialises frames.
type frameWriter struct {
	mu sync.Mutex
	ws *websocket.Conn
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := websocket.Message.Send(f.ws, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *frameWriter) sendJSON(v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = websocket.Message.Send(f.ws, string(b))
}
