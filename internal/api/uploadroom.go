package api

import (
	"context"
	"fmt"
	"sync"
)

// uploadLedger holds, per team, the bytes its uploads in flight may still
// write: a team's uploads at once cannot pass its disk quota together.
// Each upload was checked once, when it began, against what the team held
// on disk, so uploads started together all passed before any had written a
// byte (eight of 12 MiB under a 10 MiB quota all landed, and a team could
// open as many 512 MiB uploads as it had connections). Now an upload is
// admitted only while what the team holds plus what its uploads in flight
// may write is under the quota, and reserves its declared length (the
// bound of one upload when it declares none) until it ends: the quota is
// passed by one upload at most, as by sequential ones.
type uploadLedger struct {
	mu       sync.Mutex // held across the check and the reservation
	inFlight map[string]int64
}

// admitUpload admits an upload of n bytes (n < 0: not declared) of
// template tid's files, or answers the team's disk quota error (429).
// release ends the reservation; call it once the upload has ended (its
// file renamed into place or removed).
func (s *Server) admitUpload(ctx context.Context, tid string, n int64) (release func(), err error) {
	if s.tenants == nil {
		return func() {}, nil
	}
	team, err := s.tenants.st.TemplateOwner(ctx, tid)
	if err != nil {
		return nil, fmt.Errorf("template %s: owner: %w", tid, err)
	}
	limit := s.diskLimit(team)
	if limit <= 0 {
		return func() {}, nil
	}
	if max := s.builds.MaxUploadBytes(); n < 0 || n > max {
		n = max
	}
	l := &s.uploading
	l.mu.Lock()
	defer l.mu.Unlock()
	used, err := s.diskUsed(ctx, team, nil)
	if err != nil {
		return nil, err
	}
	if used += mib(l.inFlight[team]); used >= limit {
		return nil, diskErr(limit, used)
	}
	if l.inFlight == nil {
		l.inFlight = map[string]int64{}
	}
	l.inFlight[team] += n
	return func() { l.release(team, n) }, nil
}

func (l *uploadLedger) release(team string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[team] -= n; l.inFlight[team] <= 0 {
		delete(l.inFlight, team)
	}
}
