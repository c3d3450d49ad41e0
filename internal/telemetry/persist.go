package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FileName is the file in the daemon's data dir that keeps the store across
// a clean restart (Save on shutdown, Load on start). A crash loses the
// history since the last start; nothing else depends on it.
const FileName = "telemetry.json"

// saved is the on-disk form of a Store.
type saved struct {
	Version   int                     `json:"version"`
	Sandboxes map[string]savedRecord  `json:"sandboxes"`
	Teams     map[string][]TeamSample `json:"teams"`
}

type savedRecord struct {
	Team    string    `json:"team"`
	Created time.Time `json:"created"`
	Ended   time.Time `json:"ended"`
	Samples []Sample  `json:"samples"`
	Logs    []Entry   `json:"logs"`
}

const savedVersion = 1

// Save writes the store to path atomically (a temporary file renamed over
// it), readable by the daemon's user only.
func (s *Store) Save(path string) error {
	b, err := json.Marshal(s.snapshot())
	if err != nil {
		return fmt.Errorf("encode telemetry: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".telemetry-*")
	if err != nil {
		return fmt.Errorf("save telemetry: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save telemetry: %w", err)
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("save telemetry: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

func (s *Store) snapshot() saved {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := saved{Version: savedVersion, Sandboxes: map[string]savedRecord{}, Teams: map[string][]TeamSample{}}
	for id, r := range s.sbx {
		out.Sandboxes[id] = savedRecord{Team: r.team, Created: r.created, Ended: r.ended,
			Samples: inWindow(r.samples, Window{}, func(v Sample) time.Time { return v.Time }),
			Logs:    inWindow(r.logs, Window{}, func(v Entry) time.Time { return v.Time })}
	}
	for team, r := range s.teams {
		out.Teams[team] = inWindow(r, Window{}, func(v TeamSample) time.Time { return v.Time })
	}
	return out
}

// Load reads what Save wrote at path into the (empty) store, within its
// limits, and removes the file. A missing file is no error; an unreadable
// one is reported and ignored (the history starts afresh).
func (s *Store) Load(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	defer os.Remove(path)
	if err != nil {
		return fmt.Errorf("load telemetry: %w", err)
	}
	var in saved
	if err := json.Unmarshal(b, &in); err != nil || in.Version != savedVersion {
		return fmt.Errorf("load telemetry %s: unreadable (version %d): %v", path, in.Version, err)
	}
	s.restore(in)
	s.gc()
	return nil
}

func (s *Store) restore(in saved) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sr := range in.Sandboxes {
		r := s.recordLocked(id)
		r.team, r.created, r.ended = sr.Team, sr.Created, sr.Ended
		for _, smp := range sr.Samples {
			r.samples.push(smp)
		}
		for _, e := range sr.Logs {
			r.logs.push(e.clean())
		}
	}
	for team, samples := range in.Teams {
		r := newRing[TeamSample](s.lim.TeamKeep)
		for _, smp := range samples {
			r.push(smp)
		}
		s.teams[team] = r
	}
}

// EndMissing marks every sandbox the store believes alive but that is not
// in live as ended now (after a restart: those that did not come back).
func (s *Store) EndMissing(live map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.sbx {
		if r.ended.IsZero() && !live[id] {
			r.ended = s.now()
		}
	}
}
