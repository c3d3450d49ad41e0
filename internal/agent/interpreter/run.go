package interpreter

import (
	"context"
	"errors"
	"strings"
	"time"
)

// interruptGrace is how long an interrupted cell may take to stop before
// its kernel is killed (and replaced on next use).
var interruptGrace = 10 * time.Second

// execute runs one cell and sends its output lines to out. Cancelling ctx
// (the client left or timed out) interrupts the cell; the context keeps its
// state. Executions of one context run one at a time.
func (k *kcontext) execute(ctx context.Context, code string, env map[string]string, out chan<- line) {
	if err := k.acquire(ctx); err != nil {
		return
	}
	defer k.release()
	d, err := k.driver()
	if err != nil {
		out <- errorLine(errorName(err), err.Error(), "")
		return
	}
	k.syncGlobals(d)
	if len(env) > 0 && !runSilent(d, applyEnvCode(k.Language, env), interruptGrace) {
		k.drop(d)
		out <- errorLine("EnvVarsError", "could not set env_vars; the context was reset", "")
		return
	}
	if err := d.execute(code, false); err != nil || !k.stream(ctx, d, out) {
		return
	}
	if len(env) > 0 && !runSilent(d, revertEnvCode(k.Language, env), interruptGrace) {
		k.drop(d)
	}
}

func errorName(err error) string {
	if errors.Is(err, errDriverStart) {
		return "KernelStartError"
	}
	return "ContextError"
}

// stream forwards d's events for the running cell until it is done; false
// when the driver died or was killed (the error is sent to out).
func (k *kcontext) stream(ctx context.Context, d *driver, out chan<- line) bool {
	cancelled := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case ev, ok := <-d.events:
			if !ok || ev.Type == "dead" {
				out <- k.deadLine(d, ev.Reason)
				return false
			}
			if ev.Type == "done" {
				return true
			}
			if l := eventLine(ev); l != nil {
				out <- l
			}
		case <-cancelled:
			d.interrupt()
			cancelled, grace = nil, time.After(interruptGrace)
		case <-grace:
			k.drop(d)
		}
	}
}

// deadLine reports the end of a driver that died during a cell, and forgets
// it so that the next execution starts a fresh one.
func (k *kcontext) deadLine(d *driver, reason string) line {
	k.mu.Lock()
	restarting := k.d != d
	k.mu.Unlock()
	if restarting {
		return errorLine("ContextRestarting", "the context was restarted or removed during the execution", "")
	}
	k.drop(d)
	if reason == "" {
		reason = "the kernel died"
	}
	msg := reason + "; its state is lost and the next execution starts a fresh one"
	if logs := strings.TrimSpace(d.logs.String()); logs != "" {
		msg += " (" + lastLine(logs) + ")"
	}
	return errorLine("DeadKernelError", msg, "")
}

func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

// eventLine converts a driver event to its NDJSON line (nil: none).
func eventLine(ev event) line {
	switch ev.Type {
	case "stdout", "stderr":
		return streamLine(ev.Type, ev.Text, time.Now())
	case "result":
		return resultLine(ev.Data, ev.Main)
	case "error":
		return errorLine(ev.Name, ev.Value, joinTraceback(ev.Traceback))
	case "count":
		return countLine(ev.Count)
	}
	return nil
}

// runSilent runs code without output and waits for it; false when the
// driver died or did not finish within timeout.
func runSilent(d *driver, code string, timeout time.Duration) bool {
	if d.execute(code, true) != nil {
		return false
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-d.events:
			if !ok || ev.Type == "dead" {
				return false
			}
			if ev.Type == "done" {
				return true
			}
		case <-timer.C:
			return false
		}
	}
}
