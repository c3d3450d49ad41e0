package agent

import (
	"context"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
	"github.com/sbx-dev/sbx/internal/agent/identity"
)

// BenchmarkCommandRoundTrip measures one command through a real agent over
// loopback HTTP: Start, the start event, the process's run, the end event.
// It reports ns/op (the mean) and p50/p95 per command. "json-http1" is
// what the E2B JS SDK speaks; "bash-login" is the SDK's commands.run shape.
func BenchmarkCommandRoundTrip(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	a := newAgent(b, Config{})
	a.state.Apply(identity.Init{AccessToken: ptr("tok")})
	cases := []struct {
		name   string
		client *http.Client
		opts   []connect.ClientOption
		cfg    *rpc.ProcessConfig
	}{
		{"json-http1/true", http.DefaultClient, []connect.ClientOption{connect.WithProtoJSON()}, &rpc.ProcessConfig{Cmd: "/bin/true"}},
		{"proto-h2c/true", h2cClient(), nil, &rpc.ProcessConfig{Cmd: "/bin/true"}},
		{"json-http1/bash-login", http.DefaultClient, []connect.ClientOption{connect.WithProtoJSON()},
			&rpc.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "true"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			proc := processconnect.NewProcessClient(c.client, a.url, append(c.opts, withToken("tok"))...)
			stdin := false
			req := &rpc.StartRequest{Process: c.cfg, Stdin: &stdin}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				roundTrip(b, proc, req)
				times = append(times, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

func roundTrip(b *testing.B, proc processconnect.ProcessClient, msg *rpc.StartRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := connect.NewRequest(msg)
	req.Header().Set("Keepalive-Ping-Interval", "50")
	stream, err := proc.Start(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	defer stream.Close()
	ended := false
	for stream.Receive() {
		if e := stream.Msg().GetEvent().GetEnd(); e != nil {
			ended = e.GetExitCode() == 0
		}
	}
	if err := stream.Err(); err != nil || !ended {
		b.Fatalf("round trip: ended %v, %v", ended, err)
	}
}
