package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// holdConn takes the SQLite store's one connection until the returned
// release is called, and has the group commit take a first write ("plug")
// that waits for it: writes made meanwhile queue behind, so the next batch
// holds them all (what a burst of creates does while a commit syncs).
// release returns once the plug is written.
func holdConn(t *testing.T, s *Store) (release func()) {
	t.Helper()
	c, err := s.db.DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plug := make(chan error, 1)
	go func() { plug <- s.Put(context.Background(), &Sandbox{ID: "plug", State: StateRunning}) }()
	waitQueued()
	return func() {
		c.Close()
		if err := <-plug; err != nil {
			t.Error(err)
		}
	}
}

// batchSizes records the size of each write the group commit runs.
func batchSizes(s *Store) func() []int {
	var mu sync.Mutex
	var sizes []int
	s.gc.onCommit = func(n int) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() }
	return func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), sizes...) }
}

// waitQueued gives n writers time to reach the group commit's queue.
func waitQueued() { time.Sleep(200 * time.Millisecond) }

// TestGroupCommitBatches: writes that wait while a commit is in flight go
// into one transaction, each returns only once it is on disk (a reopened
// store has every record), and every record is the one its writer wrote.
func TestGroupCommitBatches(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := batchSizes(s)
	release := holdConn(t, s)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Sandbox{ID: fmt.Sprintf("sb%02d", i), State: StateRunning, TemplateID: "base", StartedAt: time.Now()}
			errs <- s.Put(context.Background(), r)
		}()
	}
	waitQueued()
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, total := sizes(), 0
	for _, k := range got {
		total += k
	}
	if total != n+1 || len(got) != 2 || got[1] != n {
		t.Fatalf("batches %v: want the plug alone, then the %d writes in one transaction", got, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	all, err := s2.List(context.Background())
	if err != nil || len(all) != n+1 {
		t.Fatalf("after reopen: %d records, %v; want %d", len(all), err, n+1)
	}
	for _, r := range all {
		if r.ID != "plug" && (r.State != StateRunning || r.TemplateID != "base") {
			t.Fatalf("record %s: %+v", r.ID, r)
		}
	}
}

// TestGroupCommitFailsAlone: a write of a batch that fails is rolled back
// alone; the others of its batch are committed.
func TestGroupCommitFailsAlone(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sizes := batchSizes(s)
	release := holdConn(t, s)
	var wg sync.WaitGroup
	var badErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, badErr = s.write(context.Background(), func(q querier) (sql.Result, error) {
			// a first statement that succeeds, then one that fails: neither stays
			if _, err := q.ExecContext(context.Background(), `INSERT INTO sandboxes(id, state, template, started_at, end_at, doc, node, storage)
				VALUES('half','running','base',0,0,'{}','','')`); err != nil {
				return nil, err
			}
			return q.ExecContext(context.Background(), `INSERT INTO no_such_table VALUES(1)`)
		})
	}()
	putMany(t, s, &wg, "ok", 5)
	waitQueued()
	release()
	wg.Wait()
	if badErr == nil {
		t.Fatal("the failing write succeeded")
	}
	if got := sizes(); len(got) != 2 || got[1] != 6 {
		t.Fatalf("batches %v, want the plug, then one of 6", got)
	}
	all, err := s.List(context.Background())
	if err != nil || len(all) != 6 {
		t.Fatalf("%d records (%v), want the plug and the 5 good ones, not the failed write's first row", len(all), err)
	}
}

// TestGroupCommitFailedCommitFailsAll: when the batch's transaction cannot
// be committed, every write of it fails and none is on disk.
func TestGroupCommitFailedCommitFailsAll(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := holdConn(t, s)
	var wg sync.WaitGroup
	var killerErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		// ends the shared transaction: its savepoint release then fails
		_, killerErr = s.write(context.Background(), func(q querier) (sql.Result, error) {
			return q.ExecContext(context.Background(), `ROLLBACK`)
		})
	}()
	errs := putMany(t, s, &wg, "lost", 4)
	waitQueued()
	release()
	wg.Wait()
	if killerErr == nil {
		t.Fatal("the write that ended the transaction succeeded")
	}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("write %d of a failed batch succeeded", i)
		}
	}
	all, err := s.List(context.Background())
	if err != nil || len(all) != 1 {
		t.Fatalf("%d records (%v) after a failed batch, want only the plug", len(all), err)
	}
	// the store still works
	if err := s.Put(context.Background(), &Sandbox{ID: "after", State: StateRunning}); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitCancelled: a write whose context ends before its batch
// starts is not run; one after Close fails.
func TestGroupCommitCancelled(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	release := holdConn(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var cancelled error
	wg.Add(1)
	go func() {
		defer wg.Done()
		cancelled = s.Put(ctx, &Sandbox{ID: "gone", State: StateRunning})
	}()
	errs := putMany(t, s, &wg, "kept", 3)
	waitQueued()
	cancel()
	release()
	wg.Wait()
	if !errors.Is(cancelled, context.Canceled) {
		t.Fatalf("cancelled write: %v", cancelled)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get(context.Background(), "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancelled write stored: %v", err)
	}
	s.Close()
	if err := s.Put(context.Background(), &Sandbox{ID: "late", State: StateRunning}); err == nil {
		t.Fatal("Put after Close succeeded")
	}
}

// putMany starts n Puts of records prefix0..prefixN-1 in wg; their errors
// are in the returned slice once wg is done.
func putMany(t *testing.T, s *Store, wg *sync.WaitGroup, prefix string, n int) []error {
	t.Helper()
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Put(context.Background(), &Sandbox{ID: fmt.Sprintf("%s%d", prefix, i), State: StateRunning})
		}()
	}
	return errs
}
