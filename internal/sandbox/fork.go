package sandbox

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// MaxForks bounds one fork request's count.
const MaxForks = 16

// CheckForkCount is ErrInvalid for a fork count outside 1..MaxForks.
func CheckForkCount(count int) error {
	if count < 1 || count > MaxForks {
		return fmt.Errorf("%w: count must be between 1 and %d", ErrInvalid, MaxForks)
	}
	return nil
}

// forkParallel bounds how many children are restored at once.
const forkParallel = 4

// ForkResult is one child of a fork: its Info, or the error that stopped it.
type ForkResult struct {
	Info Info
	Err  error
}

// Fork captures a running sandbox's memory and files at one instant (it is
// frozen for that long, then continues) and starts count children from the
// capture, each with its own id, envd token, writable layer copy, network
// and address, and deadline now+timeout. Children fail independently. The
// error is for the request as a whole (unknown, paused, runtime without
// checkpoints); then no child was attempted.
func (m *Manager) Fork(ctx context.Context, id string, count int, timeout time.Duration) ([]ForkResult, error) {
	if err := CheckForkCount(count); err != nil {
		return nil, err
	}
	if err := m.checkTimeout(timeout); err != nil {
		return nil, err
	}
	if err := m.refuseVolumes(id, "fork"); err != nil {
		return nil, err
	}
	t0 := time.Now()
	dir, src, err := m.captureRunning(ctx, id, m.scratchDir(), false)
	if err != nil {
		return nil, err
	}
	defer removeImage(dir)
	defer func() { m.observer().Lifecycle("fork", src.Runtime, time.Since(t0), nil) }()
	out := make([]ForkResult, count)
	sem := make(chan struct{}, forkParallel)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i].Info, out[i].Err = m.startChild(ctx, childRecord(src), dir, timeout)
		}()
	}
	wg.Wait()
	m.log.Info("sandbox forked", "sandbox", id, "count", count, "took", time.Since(t0))
	return out, nil
}

// captureRunning captures the running sandbox id into dir and lets it
// continue. quota counts the image against the quota (snapshots). It
// returns dir and a copy of the source's record.
func (m *Manager) captureRunning(ctx context.Context, id, dir string, quota bool) (string, store.Sandbox, error) {
	sb, unlock, err := m.lockOp(id)
	if err != nil {
		return "", store.Sandbox{}, err
	}
	defer unlock()
	if err := m.pausable(sb, true); err != nil {
		return "", store.Sandbox{}, err
	}
	if quota {
		if err := m.checkQuota(0); err != nil {
			return "", store.Sandbox{}, err
		}
	}
	size, err := m.capture(ctx, sb, dir, true)
	m.thaw(context.WithoutCancel(ctx), sb)
	if err == nil && quota {
		if err = m.checkQuota(size); err != nil {
			_ = removeImage(dir)
		}
	}
	m.mu.Lock()
	rec := sb.rec
	m.mu.Unlock()
	return dir, rec, err
}

// childRecord is the record of a new sandbox restored from src's image: a
// fresh identity with src's template, runtime, resources, env, metadata and
// lifecycle settings. The init secret is src's: the restored agent holds it
// in memory (it is never visible inside the sandbox).
func childRecord(src store.Sandbox) store.Sandbox {
	rec := newRecord(Template{Name: src.TemplateID, Build: src.Build, Alias: src.Alias}, src.Runtime, Resources{CPUCount: src.CPUCount, MemoryMB: src.MemoryMB, DiskSizeMB: src.DiskSizeMB})
	rec.InitSecret, rec.Team = src.InitSecret, src.Team
	rec.Metadata, rec.EnvVars = maps.Clone(src.Metadata), maps.Clone(src.EnvVars)
	rec.AutoPause, rec.AllowNet, rec.Network = src.AutoPause, src.AllowNet, src.Network.Clone()
	rec.Persist = store.Persistence{AutoResume: src.Persist.AutoResume, TimeoutSec: src.Persist.TimeoutSec, NoMemory: src.Persist.NoMemory}
	if src.TrafficTok != "" {
		rec.TrafficTok = newToken()
	}
	return rec
}

// startChild records, restores and initialises one sandbox from the image
// in dir, then registers it with deadline now+timeout. On error it is reaped.
func (m *Manager) startChild(ctx context.Context, rec store.Sandbox, dir string, timeout time.Duration) (Info, error) {
	if err := m.admit(ctx, rec.Runtime, rec.Team); err != nil {
		return Info{}, err
	}
	defer m.release(rec.Runtime)
	if err := m.store.Put(ctx, &rec); err != nil {
		return Info{}, fmt.Errorf("create %s: %w", rec.ID, err)
	}
	rec.EnvdToken, rec.LifecycleID = newToken(), newToken()[:16]
	sb, err := m.restoreFrom(ctx, &rec, dir, true)
	if err != nil {
		m.reap(context.WithoutCancel(ctx), rec.ID, rec.Runtime, nil)
		return Info{}, err
	}
	now := time.Now().UTC()
	sb.rec.StartedAt, sb.rec.EndAt = now, now.Add(timeout)
	return m.register(ctx, sb)
}
