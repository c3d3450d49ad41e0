package sandbox

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

const pauseRetryFirst = 30 * time.Second // Config.PauseRetry's default

// diskCause names why a pause was refused for want of disk, a bound the
// sandbox's owner cannot lift at its deadline ("" for any other failure):
// its team's disk quota (the DiskAdmit's ErrBusy), the node's
// --image-quota-mb (ErrQuota), a full disk (ErrNoSpace).
func diskCause(err error) string {
	switch {
	case errors.Is(err, ErrQuota):
		return "image_quota"
	case errors.Is(err, ErrNoSpace):
		return "no_space"
	case errors.Is(err, ErrBusy):
		return "team_disk_quota"
	}
	return ""
}

// pauseRetryWait is the wait after the tries-th refused pause in a row
// (tries >= 1): first, doubled each time, at most 8 × first.
func pauseRetryWait(first time.Duration, tries int) time.Duration {
	return first << min(max(tries-1, 0), 3)
}

// pauseRetryPlan is when sb's refused deadline pause is tried next: it
// defers a sandbox whose deadline was end (already deferred: since is the
// deadline first reached), refused for the tries-th time in a row, at now;
// ok is false once the retries' window (limit past since) is over.
func pauseRetryPlan(since, end, now time.Time, tries int, first, limit time.Duration) (next, sinceOut time.Time, ok bool) {
	if since.IsZero() {
		since = end
	}
	ceiling := since.Add(limit)
	if !now.Before(ceiling) {
		return time.Time{}, since, false
	}
	next = now.Add(pauseRetryWait(first, tries))
	if next.After(ceiling) {
		next = ceiling
	}
	return next, since, true
}

// deferPause keeps running an autoPause sandbox whose deadline's pause
// failed with err, when err is for want of disk and the retries' window
// is not over: its deadline moves to the next try (recorded, so GET shows
// it and a restarted daemon tries then too), and the refusal is logged,
// recorded (event "pause-deferred") and counted. It reports whether it
// did; if not, the caller kills sb. The caller holds sb.op.
func (m *Manager) deferPause(ctx context.Context, sb *Sandbox, err error) bool {
	cause := diskCause(err)
	if cause == "" {
		return false
	}
	m.mu.Lock()
	rec := sb.rec
	m.mu.Unlock()
	sb.pauseTries++
	next, since, ok := pauseRetryPlan(rec.Persist.PauseDeferredSince, rec.EndAt, time.Now().UTC(), sb.pauseTries, m.pauseRetryFirst(), m.pauseRetryFor())
	if !ok {
		m.abandonPause(sb, since, cause, err)
		return false
	}
	m.observer().PauseRefused(cause, true)
	rec.EndAt, rec.Persist.PauseDeferredSince = next, since
	if perr := m.store.Put(ctx, &rec); perr != nil {
		// Deferred in memory only: a restarted daemon finds the deadline
		// passed and tries the pause at once.
		m.log.Error("record deferred pause", "sandbox", rec.ID, "err", perr)
	}
	m.mu.Lock()
	sb.rec.EndAt, sb.rec.Persist.PauseDeferredSince, sb.pauseTriedAt = next, since, time.Now()
	m.armLocked(sb)
	m.mu.Unlock()
	until := since.Add(m.pauseRetryFor())
	m.log.Warn("deadline's pause refused for want of disk; the sandbox runs on until a retry pauses it",
		"sandbox", rec.ID, "cause", cause, "err", err, "tries", sb.pauseTries, "retry_at", next, "until", until)
	m.event(rec.ID, "pause-deferred", "cause", cause, "error", err.Error(), "tries", strconv.Itoa(sb.pauseTries),
		"retryAt", next.Format(time.RFC3339), "until", until.Format(time.RFC3339))
	return true
}

// abandonPause records that sb's refused pause will not be tried again:
// its retries' window, from since, is over; the caller kills it.
func (m *Manager) abandonPause(sb *Sandbox, since time.Time, cause string, err error) {
	m.observer().PauseRefused(cause, false)
	limit := m.pauseRetryFor()
	m.log.Error("deadline's pause still refused for want of disk at the end of its retries; killing the sandbox",
		"sandbox", sb.rec.ID, "cause", cause, "err", err, "tries", sb.pauseTries, "deadline", since, "retried_for", limit)
	m.event(sb.rec.ID, "pause-abandoned", "cause", cause, "error", err.Error(), "tries", strconv.Itoa(sb.pauseTries),
		"deadline", since.Format(time.RFC3339), "retriedFor", limit.String())
}

// nudgeGap is the least time between two tries of one sandbox's deferred
// pause when freed disk starts them: a try at the image quota captures the
// sandbox (a freeze and a copy) before it finds the image too big, and
// deletes are any team's to make.
const nudgeGap = 5 * time.Second

// DiskFreed tells the manager that disk was freed (a paused sandbox
// killed, a snapshot, volume or template deleted): every sandbox whose
// deadline's pause was refused for want of disk tries it again now (at
// most one try per nudgeGap each), not at its next retry. Cheap when there
// are none; it does not block.
func (m *Manager) DiskFreed() {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, sb := range m.sandboxes {
		if sb.rec.State != store.StateRunning || sb.rec.Persist.PauseDeferredSince.IsZero() || sb.nudgeArmed {
			continue
		}
		wait := max(time.Until(sb.pauseTriedAt.Add(nudgeGap)), 0)
		if !now.Add(wait).Before(sb.rec.EndAt) {
			continue // its next retry comes first
		}
		sb.nudgeArmed = true
		time.AfterFunc(wait, func() { m.nudge(id, sb) })
	}
}

// nudge is the try of sb's deferred pause that DiskFreed scheduled.
func (m *Manager) nudge(id string, sb *Sandbox) {
	m.mu.Lock()
	sb.nudgeArmed = false
	m.mu.Unlock()
	m.expireSandbox(id, true)
}

func (m *Manager) pauseRetryFirst() time.Duration {
	if m.cfg.PauseRetry > 0 {
		return m.cfg.PauseRetry
	}
	return pauseRetryFirst
}

func (m *Manager) pauseRetryFor() time.Duration {
	if m.cfg.PauseRetryFor > 0 {
		return m.cfg.PauseRetryFor
	}
	return m.cfg.MaxTimeout
}
