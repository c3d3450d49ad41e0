package proxy

import (
	"net/http"
	"testing"
)

// BenchmarkAgentRequest: one small request to the agent's port through the
// proxy, with the stall watch (its goroutine, timer and context per
// request) and without it.
func BenchmarkAgentRequest(b *testing.B) {
	for _, c := range []struct {
		name  string
		stall Stall
	}{{"watched", DefaultStall}, {"unwatched", Stall{}}} {
		b.Run(c.name, func(b *testing.B) {
			a := newFakeAgent(b, c.stall)
			a.healthy.Store(true)
			for b.Loop() {
				if rec := a.ask(EnvdPort); rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
