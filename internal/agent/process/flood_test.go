package process

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/api/proto/envd/process/processconnect"
)

// heapWatch samples the heap in use until stopped and returns its peak.
func heapWatch() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// uncompressedClient is a protobuf client that does not accept gzip: the
// agent compresses a stream of zeros a thousandfold, so a client that never
// reads would otherwise hold a whole flood in the kernel's socket buffers
// without the agent dropping anything.
func uncompressedClient(url string) processconnect.ProcessClient {
	return processconnect.NewProcessClient(http.DefaultClient, url, connect.WithAcceptCompression("gzip", nil, nil))
}

// A process printing far more than any buffer, without a newline, to a slow
// Start client and a Connect client that never reads: the Start stream gets
// every byte (backpressure), the stalled watcher does not hold the process
// up, and the agent's heap stays bounded.
func TestOutputFloodIsBounded(t *testing.T) {
	e := newEnv(t)
	size := 256 << 20
	if testing.Short() || raceEnabled {
		size = 32 << 20
	}
	runtime.GC()
	peak := heapWatch()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := e.binary.Start(ctx, call(sh(fmt.Sprintf("head -c %d /dev/zero", size)), "root"))
	must(t, err)
	if !stream.Receive() {
		t.Fatal(stream.Err())
	}
	pid := stream.Msg().GetEvent().GetStart().GetPid()

	// A watcher that attaches and then never reads.
	stalledCtx, stopStalled := context.WithCancel(context.Background())
	defer stopStalled()
	stalled, err := uncompressedClient(e.url).Connect(stalledCtx, connect.NewRequest(&rpc.ConnectRequest{Process: byPid(pid)}))
	must(t, err)
	if !stalled.Receive() {
		t.Fatal(stalled.Err())
	}

	// Not reading for a while holds the process back.
	time.Sleep(500 * time.Millisecond)
	if _, ok := e.listed(t)[pid]; !ok {
		t.Fatal("the process finished although nobody read its output")
	}
	total, chunks, maxChunk := 0, 0, 0
	var end *rpc.ProcessEvent_EndEvent
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if d := ev.GetData(); d != nil {
			n := len(d.GetStdout())
			total += n
			chunks++
			maxChunk = max(maxChunk, n)
			if chunks%500 == 0 {
				time.Sleep(5 * time.Millisecond) // a slow client
			}
		}
		if ev.GetEnd() != nil {
			end = ev.GetEnd()
		}
	}
	must(t, stream.Err())
	heap := peak()
	if total != size || end.GetExitCode() != 0 {
		t.Fatalf("got %d of %d bytes, end %v", total, size, end)
	}
	if maxChunk > chunkSize {
		t.Fatalf("chunk of %d bytes", maxChunk)
	}
	t.Logf("%d MiB in %d chunks; peak heap in use %d MiB", size>>20, chunks, heap>>20)
	if heap > 96<<20 {
		t.Fatalf("peak heap %d MiB for %d MiB of output", heap>>20, size>>20)
	}
	// The stalled watcher lost chunks but still gets its end.
	got := 0
	for stalled.Receive() {
		got += len(stalled.Msg().GetEvent().GetData().GetStdout())
		if stalled.Msg().GetEvent().GetEnd() != nil {
			break
		}
	}
	t.Logf("the stalled watcher got %d MiB", got>>20)
	if got >= size {
		t.Fatalf("the stalled watcher got everything (%d bytes)?", got)
	}
}

// Output written right before exit is delivered even when a descendant keeps
// the pipe open, and the stream does not wait for that descendant.
func TestExitDoesNotWaitForDescendantsHoldingThePipe(t *testing.T) {
	e := newEnv(t)
	begin := time.Now()
	r := e.run(t, "sleep 5 & head -c 200000 /dev/zero | tr '\\0' x; echo; echo last", "root")
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("took %v: waited for the background job", took)
	}
	out := r.stdout.String()
	if len(out) != 200000+len("\nlast\n") || !strings.HasSuffix(out, "\nlast\n") {
		t.Fatalf("got %d bytes ending %q", len(out), out[max(0, len(out)-10):])
	}
}

// Orphans re-parented to the agent are reaped, and exit statuses are never
// stolen from the processes the service tracks.
func TestReaperReapsOrphansWithoutStealingStatuses(t *testing.T) {
	e := newEnv(t)
	// Double-forked daemons: their parents exit at once.
	var orphans []string
	for i := 0; i < 5; i++ {
		r := e.run(t, "(setsid sh -c 'sleep 0.2; exit 9' & echo $!) ; (sleep 0.1 & echo $!) ; exit 0", "root")
		orphans = append(orphans, strings.Fields(r.stdout.String())...)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			r := e.run(t, fmt.Sprintf("(sleep 0.05 &); exit %d", i), "root")
			if r.end.GetExitCode() != int32(i) {
				t.Errorf("process %d: end %v", i, r.end)
			}
		})
	}
	wg.Wait()
	if len(orphans) != 10 {
		t.Fatalf("orphans %v", orphans)
	}
	for _, pid := range orphans {
		eventually(t, "orphan "+pid+" to be reaped", func() bool {
			_, err := os.Stat("/proc/" + pid)
			return err != nil
		})
	}
	if z := zombies(t); len(z) != 0 {
		t.Fatalf("zombie children %v", z)
	}
}

// zombies lists this process's children that are zombies.
func zombies(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	must(t, err)
	var out []int
	me := os.Getpid()
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[0] == "Z" && fields[1] == strconv.Itoa(me) {
			out = append(out, pid)
		}
	}
	return out
}

func TestPTYExitDoesNotWaitForDescendantsHoldingTheTerminal(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	r := e.start(t, ctx, call(&rpc.StartRequest{Process: &rpc.ProcessConfig{Cmd: "/bin/sh",
		Args: []string{"-c", "nohup sleep 5 >/dev/null 2>&1 & sleep 5 & echo last-words"}}, Pty: &rpc.PTY{}}, "root"))
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("took %v: waited for the background job", took)
	}
	if r.err != nil || !strings.Contains(r.pty.String(), "last-words") || r.end.GetExitCode() != 0 {
		t.Fatalf("pty %q end %v err %v", r.pty.String(), r.end, r.err)
	}
}
