package main

import (
	"strings"
	"testing"
)

// TestHeadBuffer: a command's stream through /mcp keeps its first max bytes
// and counts the rest (what a sandbox prints is held in the daemon).
func TestHeadBuffer(t *testing.T) {
	h := &headBuffer{max: 8}
	for range 1000 {
		if n, err := h.Write([]byte("0123456789")); n != 10 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if got := h.String(); !strings.HasPrefix(got, "01234567\n[9992 more bytes not shown]") || h.b.Len() != 8 {
		t.Fatalf("kept %d bytes: %q", h.b.Len(), got)
	}
	small := &headBuffer{max: 8}
	_, _ = small.Write([]byte("ok"))
	if small.String() != "ok" {
		t.Fatalf("small output: %q", small.String())
	}
}
