package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// diskLedger admits what takes a team's disk quota one at a time, so that
// requests at once cannot pass it together, and holds, per team, the bytes
// its uploads and snapshots in flight may still write. Each template
// upload, snapshot and volume create was checked once, as it began,
// against what the team held (snapshots taken at once all passed too): uploads
// started together all passed before any had written a byte (eight of
// 12 MiB under a 10 MiB quota all landed, and a team could open as many
// 512 MiB uploads as it had connections), and volume creates sent together
// all passed before any was recorded (six of 16 MiB under 20 MiB, each
// image allocated in full, out of the node's --volume-total-mb that every
// team shares). Now an upload is admitted only while what the team holds
// plus what its uploads in flight may write is under the quota, and
// reserves its declared length (the bound of one upload when it declares
// none) until it ends: the quota is passed by one upload at most, as by
// sequential ones; a snapshot likewise, reserving its sandbox's memory and
// disk sizes; a volume is made under the ledger's lock, its size and
// the uploads in flight counted.
type diskLedger struct {
	mu       sync.Mutex // held across a check and its reservation or create
	inFlight map[string]int64
}

// withDiskRoom runs create (a volume's, of addMB) under the ledger's lock
// once what r's team holds, its uploads in flight and addMB fit its disk
// quota; else it answers the quota error (429).
func (s *Server) withDiskRoom(r *http.Request, addMB int64, create func() error) error {
	team := teamOf(r)
	if s.diskLimit(team) <= 0 {
		return create()
	}
	l := &s.disk
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := s.diskQuota(r, addMB+mib(l.inFlight[team])); err != nil {
		return err
	}
	return create()
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
	if max := s.builds.MaxUploadBytes(); n < 0 || n > max {
		n = max
	}
	return s.reserveDisk(ctx, team, n)
}

// admitSnapshot admits a snapshot of live sandbox id, reserving the most
// its image may hold (the sandbox's memory and disk sizes) until release.
func (s *Server) admitSnapshot(ctx context.Context, team, id string) (release func(), err error) {
	if s.diskLimit(team) <= 0 {
		return func() {}, nil
	}
	in, err := s.mgr.Owned(team, id)
	if err != nil {
		return nil, err
	}
	return s.reserveDisk(ctx, team, int64(in.MemoryMB+in.DiskSizeMB)<<20)
}

// reserveDisk admits n bytes more of team's while what it holds and what
// is reserved for it are under its disk quota (a team without one: always),
// or answers the quota error (429). release ends the reservation.
func (s *Server) reserveDisk(ctx context.Context, team string, n int64) (release func(), err error) {
	limit := s.diskLimit(team)
	if limit <= 0 {
		return func() {}, nil
	}
	l := &s.disk
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

func (l *diskLedger) release(team string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[team] -= n; l.inFlight[team] <= 0 {
		delete(l.inFlight, team)
	}
}
