package process

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
	"github.com/sbx-dev/sbx/internal/agent/oomscore"
)

// ptyFlushGrace is how long a PTY's reader keeps waiting for output after
// the process exits while descendants still hold the terminal: the kernel
// moves what was written to the slave into the master asynchronously.
const ptyFlushGrace = 100 * time.Millisecond

// proc is one process started by the service. It is the leader of its own
// process group (pgid == pid), so signals reach its children too.
//
// Lifecycle: spawn → running → exited (wait status known) → ended (output
// finished too; subscribers' queues closed, removed from the service).
type proc struct {
	pid uint32
	tag *string
	cfg *rpc.ProcessConfig
	os  *os.Process

	tty     *os.File // PTY master; nil for a piped process
	outs    []output
	outputs sync.WaitGroup // one per output, done when it is finished

	stdinMu sync.Mutex
	stdin   *os.File // write end of stdin; nil when disabled or closed

	exited chan struct{} // closed once ws is set
	ws     unix.WaitStatus
	ended  chan struct{} // closed once exited and every output is finished

	mu      sync.Mutex
	subs    []*subscriber // copy-on-write: publish reads it without copying
	outDone bool
	timer   *time.Timer // lifetime limit (Connect-Timeout-Ms of Start)

	timedOut atomic.Bool // the lifetime limit killed it
}

// files are the descriptors a process is started with: the child's ends and
// the agent's ends.
type files struct {
	child  [3]*os.File
	parent []*os.File // closed if the start fails
	outs   []output
	stdin  *os.File
	tty    *os.File
}

func (f *files) closeChild() {
	for i, c := range f.child {
		if c != nil && !slices.Contains(f.child[:i], c) {
			_ = c.Close()
		}
	}
}

func (f *files) closeParent() {
	for _, c := range f.parent {
		_ = c.Close()
	}
}

// openFiles makes the pipes, or the PTY, the process is started with.
func openFiles(sp *spec) (*files, error) {
	f := &files{}
	if sp.pty != nil {
		master, slave, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("open pty: %w", err)
		}
		if sz := sp.pty.GetSize(); sz.GetCols() > 0 && sz.GetRows() > 0 {
			_ = pty.Setsize(master, &pty.Winsize{Cols: uint16(sz.GetCols()), Rows: uint16(sz.GetRows())})
		}
		if sp.cred != nil {
			// The terminal belongs to its user, as login(1) would arrange.
			_ = os.Chown(slave.Name(), int(sp.cred.Uid), -1)
		}
		f.child = [3]*os.File{slave, slave, slave}
		f.parent, f.tty = []*os.File{master}, master
		f.outs = []output{{f: master, kind: outPty}}
		return f, nil
	}
	var err error
	defer func() {
		if err != nil {
			f.closeChild()
			f.closeParent()
		}
	}()
	if sp.stdin {
		if f.child[0], f.stdin, err = os.Pipe(); err != nil {
			return nil, err
		}
		f.parent = append(f.parent, f.stdin)
	} else if f.child[0], err = os.Open(os.DevNull); err != nil {
		return nil, err
	}
	for i, kind := range []outKind{outStdout, outStderr} {
		var r *os.File
		if r, f.child[i+1], err = os.Pipe(); err != nil {
			return nil, err
		}
		f.parent = append(f.parent, r)
		f.outs = append(f.outs, output{f: r, kind: kind})
	}
	return f, nil
}

// spawn starts the process of sp with first as its first subscriber (so no
// output is missed) and registers it with the service.
func (s *Service) spawn(sp *spec, first *subscriber) (*proc, error) {
	f, err := openFiles(sp)
	if err != nil {
		return nil, errorf(connect.CodeInternal, "start %s: %v", sp.argv[0], err)
	}
	sys := &syscall.SysProcAttr{Credential: sp.cred, Setpgid: true}
	if f.tty != nil {
		sys = &syscall.SysProcAttr{Credential: sp.cred, Setsid: true, Setctty: true, Ctty: 0}
	}
	attr := &os.ProcAttr{Dir: sp.dir, Env: sp.env, Files: f.child[:], Sys: sys}
	p := &proc{tag: sp.tag, cfg: sp.cfg, tty: f.tty, stdin: f.stdin, outs: f.outs,
		exited: make(chan struct{}), ended: make(chan struct{}), subs: []*subscriber{first}}
	pid, err := theReaper.spawn(func() (int, error) {
		path, argv := launch(sp.path, sp.argv)
		osp, err := os.StartProcess(path, argv, attr)
		if err != nil {
			return 0, err
		}
		p.os = osp
		oomscore.Prefer(osp.Pid)
		return osp.Pid, nil
	}, p.onExit)
	f.closeChild()
	if err != nil {
		f.closeParent()
		return nil, errorf(connect.CodeInvalidArgument, "start %s: %v", sp.argv[0], unwrapPathError(err))
	}
	p.pid = uint32(pid)
	p.outputs.Add(len(p.outs))
	for _, o := range p.outs {
		go p.pump(o)
	}
	s.add(p)
	s.started(p, sp)
	go s.await(p)
	return p, nil
}

// onExit records the wait status. It runs on the reaper's goroutine.
func (p *proc) onExit(ws unix.WaitStatus) {
	p.ws = ws
	close(p.exited)
}

func (p *proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// await follows the process to its end: once it has exited, the readers are
// woken to drain their pipes; once they are finished, the subscribers'
// queues are closed and the process leaves the table.
func (s *Service) await(p *proc) {
	<-p.exited
	s.ended(p)
	_ = p.os.Release()
	for _, o := range p.outs {
		wake := time.Now()
		if o.kind == outPty {
			wake = wake.Add(ptyFlushGrace)
		}
		_ = o.f.SetReadDeadline(wake)
	}
	p.outputs.Wait()
	p.mu.Lock()
	p.outDone = true
	for _, sub := range p.subs {
		close(sub.ch)
	}
	p.subs = nil
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.stdinMu.Lock()
	if p.stdin != nil {
		_ = p.stdin.Close()
		p.stdin = nil
	}
	p.stdinMu.Unlock()
	close(p.ended)
	s.remove(p)
}

// subscribe adds a stream's queue. After the output is finished the queue
// comes back closed, so the stream goes straight to the end event.
func (p *proc) subscribe(lossless bool) *subscriber {
	sub := newSubscriber(lossless)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.outDone {
		close(sub.ch)
		return sub
	}
	p.subs = append(slices.Clone(p.subs), sub)
	return sub
}

// unsubscribe removes a stream's queue; a reader blocked on it is released.
func (p *proc) unsubscribe(sub *subscriber) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-sub.gone:
		return
	default:
		close(sub.gone)
	}
	if i := slices.Index(p.subs, sub); i >= 0 {
		p.subs = slices.Delete(slices.Clone(p.subs), i, i+1)
	}
}

// killAt kills the process's whole tree (and group) with SIGKILL at deadline.
func (p *proc) killAt(deadline time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.outDone {
		return
	}
	p.timer = time.AfterFunc(time.Until(deadline), p.expire)
}

// expire kills the process group because its lifetime ran out (recorded
// as a timeout in its end event).
func (p *proc) expire() {
	p.timedOut.Store(true)
	_ = p.signal(unix.SIGKILL)
}

// signal sends sig to the whole process group; SIGKILL, while the leader
// lives, first ends its whole tree (killTree: descendants in other sessions
// or groups too). Once the leader has been reaped only SIGKILL is still
// sent, and only to the group: the kernel keeps a process group's id out of
// reuse while any member lives, so the group of a leader that exited first
// (a fork bomb's shell) is still its own. SIGKILL is repeated until the
// group is empty, because members fork while it lands.
func (p *proc) signal(sig unix.Signal) error {
	theReaper.mu.Lock() // the leader cannot be reaped while we look
	exited := p.hasExited()
	var err error
	if !exited {
		if sig == unix.SIGKILL {
			killTree(int(p.pid))
		}
		err = unix.Kill(-int(p.pid), sig)
	}
	theReaper.mu.Unlock()
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	if sig == unix.SIGKILL {
		go killGroup(int(p.pid))
	}
	return nil
}

// killGroup SIGKILLs process group pgid until it is empty (bounded).
func killGroup(pgid int) {
	for i := 0; i < 200; i++ {
		if unix.Kill(-pgid, unix.SIGKILL) != nil {
			return // ESRCH: nobody left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// endEvent returns the end event; valid once ended is closed.
func (p *proc) endEvent() *rpc.ProcessEvent_EndEvent { return endEvent(p.ws) }

func (p *proc) info() *rpc.ProcessInfo {
	return &rpc.ProcessInfo{Config: p.cfg, Pid: p.pid, Tag: p.tag}
}
