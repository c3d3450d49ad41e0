package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// groupCommit batches the sandbox and snapshot record writes (Store.write)
// of a single-node SQLite store. SQLite runs with synchronous=FULL, so every
// commit waits for the disk; in a burst of creates (two record writes each)
// those syncs queued one behind the other on the store's one connection,
// inside the creates' admission slots. Writes that arrive while a commit is
// in flight now go into the next transaction together: one sync for all of
// them.
//
// The contract of each write is unchanged: it returns only once the
// transaction holding it is committed (on disk), so a record is durable
// before the caller answers. A write that fails is rolled back to its own
// savepoint and fails alone; a write whose context ended before its batch
// started is not run; a failed commit (or savepoint) fails every write of
// the batch that had not failed already (none of them is on disk). A write
// that finds no other waiting runs alone, as a single statement, as before.
//
// One goroutine (loop) owns the batching; it runs from Open to Close.
type groupCommit struct {
	db   *db
	reqs chan *gcReq
	quit chan struct{}
	done chan struct{}
	once sync.Once // closes quit
	// onCommit, if set (tests), is called with each transaction's size.
	onCommit func(n int)
}

// gcReq is one write waiting for its batch.
type gcReq struct {
	ctx  context.Context
	f    func(q querier) (sql.Result, error)
	res  sql.Result
	err  error
	done chan struct{}
}

// maxBatch bounds the writes of one transaction.
const maxBatch = 64

// errClosed is the error of a write after Close.
var errClosed = errors.New("store closed")

func newGroupCommit(d *db) *groupCommit {
	g := &groupCommit{db: d, reqs: make(chan *gcReq), quit: make(chan struct{}), done: make(chan struct{})}
	go g.loop()
	return g
}

// write runs f in the next batch and returns its outcome once that batch
// is committed (or failed).
func (g *groupCommit) write(ctx context.Context, f func(q querier) (sql.Result, error)) (sql.Result, error) {
	r := &gcReq{ctx: ctx, f: f, done: make(chan struct{})}
	select {
	case g.reqs <- r:
	case <-g.quit:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	<-r.done // never abandoned: the caller must not return before its write is settled
	return r.res, r.err
}

// stop ends the loop (after the batch in flight) and waits for it; it may
// be called more than once.
func (g *groupCommit) stop() {
	g.once.Do(func() { close(g.quit) })
	<-g.done
}

func (g *groupCommit) loop() {
	defer close(g.done)
	for {
		var batch []*gcReq
		select {
		case r := <-g.reqs:
			batch = append(batch, r)
		case <-g.quit:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		g.run(batch)
	}
}

// run writes batch: alone as one statement, or together in a transaction.
func (g *groupCommit) run(batch []*gcReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.finish(nil, err)
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].finish(live[0].f(g.db))
	default:
		g.commit(live)
	}
	if g.onCommit != nil && len(live) > 0 {
		g.onCommit(len(live))
	}
}

// commit runs live's writes in one transaction, each behind a savepoint.
func (g *groupCommit) commit(live []*gcReq) {
	bg := context.Background() // the batch is not any one caller's
	t, err := g.db.BeginTx(bg, nil)
	if err != nil {
		failAll(live, err)
		return
	}
	for _, r := range live {
		r.res, r.err = nil, nil
		if _, err := t.ExecContext(bg, `SAVEPOINT w`); err != nil {
			_ = t.Rollback()
			failAll(live, fmt.Errorf("savepoint: %w", err))
			return
		}
		if r.res, r.err = r.f(detached{t}); r.err != nil {
			if _, err := t.ExecContext(bg, `ROLLBACK TO w`); err != nil {
				_ = t.Rollback()
				failAll(live, fmt.Errorf("rollback to savepoint: %w (after %w)", err, r.err))
				return
			}
		}
		if _, err := t.ExecContext(bg, `RELEASE w`); err != nil {
			_ = t.Rollback()
			failAll(live, fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	if err := t.Commit(); err != nil {
		failAll(live, err)
		return
	}
	for _, r := range live {
		r.finish(r.res, r.err)
	}
}

// detached runs a batched write's statements without its caller's
// context: once its batch has started, a write runs to the end (a caller
// that gives up still waits for it), so no cancellation interrupts a
// statement of the shared transaction, which SQLite would roll back whole.
type detached struct{ q querier }

func (d detached) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.q.QueryContext(context.WithoutCancel(ctx), q, args...)
}

func (d detached) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.q.QueryRowContext(context.WithoutCancel(ctx), q, args...)
}

func (d detached) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.q.ExecContext(context.WithoutCancel(ctx), q, args...)
}

// failAll fails every write of batch with err (nothing of it is on disk),
// keeping the error of a write that failed on its own.
func failAll(batch []*gcReq, err error) {
	for _, r := range batch {
		if r.err == nil {
			r.err = err
		}
		r.finish(nil, r.err)
	}
}

func (r *gcReq) finish(res sql.Result, err error) {
	r.res, r.err = res, err
	close(r.done)
}
