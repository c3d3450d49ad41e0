package interpreter

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-dev/sbx/internal/agent/oomscore"
)

// event is one line a driver writes on fd 3 (see kernel_driver.py).
type event struct {
	Type      string                     `json:"type"`
	Text      string                     `json:"text"`
	Data      map[string]json.RawMessage `json:"data"`
	Main      bool                       `json:"main"`
	Name      string                     `json:"name"`
	Value     string                     `json:"value"`
	Traceback []string                   `json:"traceback"`
	Count     int                        `json:"count"`
	Pgid      int                        `json:"pgid"`
	Reason    string                     `json:"reason"`
	Error     string                     `json:"error"`
}

// driver is one running driver process (and, for python, its kernel).
// events is closed when the driver's event pipe ends.
type driver struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan event
	pgid   int // process group SIGINT goes to
	logs   *tail
	once   sync.Once
}

// startTimeout bounds how long a driver may take to report ready.
const startTimeout = 120 * time.Second

// errDriverStart is wrapped by every failure to start a driver.
var errDriverStart = errors.New("cannot start the interpreter")

// startDriver starts cmd (its stdin, fd 3 and output are set here) and
// waits until it reports ready.
func startDriver(cmd *exec.Cmd) (*driver, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDriverStart, err)
	}
	d := &driver{cmd: cmd, events: make(chan event, 64), logs: &tail{max: 8 << 10}}
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	if d.stdin, err = cmd.StdinPipe(); err == nil {
		err = cmd.Start()
	}
	if err == nil {
		// ranked like commands for the OOM killer, above the agent: a
		// kernel and what its code forks never tie with the agent
		oomscore.Prefer(cmd.Process.Pid)
	}
	// Only the driver holds the write end now: a driver that dies before
	// it is ready ends the pipe at once instead of after startTimeout.
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: %s: %w", errDriverStart, cmd.Path, err)
	}
	go d.read(r)
	go cmd.Wait() //nolint:errcheck // the status is not needed; a reaper may take it first
	return d, d.awaitReady()
}

// awaitReady waits for the ready event; on failure the driver is killed.
func (d *driver) awaitReady() error {
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-d.events:
		switch {
		case ok && ev.Type == "ready":
			d.pgid = d.cmd.Process.Pid
			if ev.Pgid > 0 {
				d.pgid = ev.Pgid
			}
			return nil
		case ok && ev.Type == "fatal":
			d.kill()
			return fmt.Errorf("%w: %s", errDriverStart, ev.Error)
		}
	case <-timer.C:
	}
	d.kill()
	return fmt.Errorf("%w: %s exited or did not answer: %s", errDriverStart, d.cmd.Path, d.logs.String())
}

// read forwards the driver's events until its pipe ends.
func (d *driver) read(r *os.File) {
	defer close(d.events)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20) // images arrive as one line
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			d.events <- ev
		}
	}
}

// execute asks the driver to run code.
func (d *driver) execute(code string, silent bool) error {
	b, err := json.Marshal(map[string]any{"op": "execute", "code": code, "silent": silent})
	if err != nil {
		return err
	}
	_, err = d.stdin.Write(append(b, '\n'))
	return err
}

// interrupt sends SIGINT to the kernel's process group.
func (d *driver) interrupt() { _ = syscall.Kill(-d.pgid, syscall.SIGINT) }

// kill ends the driver, its kernel and their process groups.
func (d *driver) kill() {
	d.once.Do(func() {
		d.stdin.Close()
		if d.pgid > 0 {
			_ = syscall.Kill(-d.pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	})
}

// tail keeps the last max bytes written to it (a driver's diagnostics).
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
