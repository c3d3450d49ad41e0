package builder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
)

// BuildRequest is E2B's TemplateBuildRequestV3.
type BuildRequest struct {
	Name     string   `json:"name"`
	Alias    string   `json:"alias,omitempty"` // deprecated name
	Tags     []string `json:"tags,omitempty"`
	CPUCount int      `json:"cpuCount,omitempty"`
	MemoryMB int      `json:"memoryMB,omitempty"`
	TeamID   string   `json:"teamID,omitempty"`
	// MinFreeDiskMB is accepted (E2B's minFreeDiskMb) and used as the build
	// sandbox's disk when larger than the default.
	MinFreeDiskMB int `json:"minFreeDiskMb,omitempty"`
	// Team is the requesting team (set by the API, never decoded): the
	// name is looked up and a new template made in its namespace.
	Team string `json:"-"`
}

// Requested is E2B's TemplateRequestResponseV3.
type Requested struct {
	TemplateID string   `json:"templateID"`
	BuildID    string   `json:"buildID"`
	Names      []string `json:"names"`
	Aliases    []string `json:"aliases"`
	Tags       []string `json:"tags"`
	Public     bool     `json:"public"`
}

// RequestBuild creates the template if its name is new and a waiting build
// of it (E2B's POST /v3/templates).
func (s *Service) RequestBuild(ctx context.Context, req BuildRequest) (*Requested, error) {
	ref := req.Name
	if ref == "" {
		ref = req.Alias
	}
	name, tag, hasTag := strings.Cut(ref, ":")
	if !validName(name) {
		return nil, fmt.Errorf("%w: template name %.64q: use 1-64 of a-z, 0-9, '-', '_', '.' (optionally ':tag')", sandbox.ErrInvalid, ref)
	}
	tags := slices.Clone(req.Tags)
	if hasTag {
		tags = append(tags, tag)
	}
	tags = slices.DeleteFunc(tags, func(t string) bool { return canonTag(t) == DefaultTag }) // every ready build gets it
	for _, t := range tags {
		if !validName(t) {
			return nil, fmt.Errorf("%w: tag %.64q: use 1-64 of a-z, 0-9, '-', '_', '.'", sandbox.ErrInvalid, t)
		}
	}
	if len(tags) > MaxTagsPerTemplate {
		return nil, fmt.Errorf("%w: %d tags: a template holds at most %d", sandbox.ErrInvalid, len(tags), MaxTagsPerTemplate)
	}
	// A built-in's name is reserved whether or not it is built here: a
	// user template's name resolves before the built-in's, so whoever took
	// it before the operator builds the built-in would own the template
	// every other team starts under that name.
	if _, builtin := template.Definitions[name]; builtin {
		return nil, fmt.Errorf("%w: %q is a built-in template; choose another name", sandbox.ErrConflict, name)
	}
	if _, err := s.reg.Builtins.Get(name); err == nil {
		return nil, fmt.Errorf("%w: %q is a built-in template; choose another name", sandbox.ErrConflict, name)
	}
	res, err := s.resources(req)
	if err != nil {
		return nil, err
	}
	s.names.Lock()
	defer s.names.Unlock()
	t, err := s.templateFor(ctx, req.Team, name)
	if err != nil {
		return nil, err
	}
	if err := s.tagRoom(ctx, t.ID, tags); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	b := &store.BuildRec{ID: newID(), TemplateID: t.ID, Status: "waiting", Tags: tags,
		CPUCount: res.CPUCount, MemoryMB: res.MemoryMB, DiskSizeMB: res.DiskSizeMB, CreatedAt: now, UpdatedAt: now}
	if err := s.st.PutBuild(ctx, b); err != nil {
		return nil, err
	}
	if err := s.pruneUnstarted(ctx, t.ID); err != nil {
		return nil, err
	}
	if err := s.reg.Reload(ctx); err != nil {
		return nil, err
	}
	return &Requested{TemplateID: t.ID, BuildID: b.ID, Names: t.Names, Aliases: t.Names, Tags: nonNilStrings(tags), Public: t.Public}, nil
}

// resources are a template's: cpuCount and memoryMB as requested (else the
// node's sandbox defaults) are what its sandboxes get; builds run with at
// least the builder's (buildResources).
func (s *Service) resources(req BuildRequest) (sandbox.Resources, error) {
	cfg := s.mgr.Config()
	return templateResources(req, cfg.Defaults, cfg.Max, s.cfg.DiskSizeMB)
}

// templateResources checks req's resources against the node's maxima as
// E2B's API does (a memoryMB not divisible by 2 is refused too) and fills
// the ones it leaves out from d.
func templateResources(req BuildRequest, d, mx sandbox.Resources, diskMB int) (sandbox.Resources, error) {
	r := sandbox.Resources{CPUCount: d.CPUCount, MemoryMB: d.MemoryMB, DiskSizeMB: diskMB}
	if req.CPUCount != 0 {
		if req.CPUCount < 1 || req.CPUCount > mx.CPUCount {
			return r, fmt.Errorf("%w: cpuCount must be between 1 and %d", sandbox.ErrInvalid, mx.CPUCount)
		}
		r.CPUCount = req.CPUCount
	}
	if req.MemoryMB != 0 {
		if req.MemoryMB < 128 || req.MemoryMB > mx.MemoryMB {
			return r, fmt.Errorf("%w: memoryMB must be between 128 and %d", sandbox.ErrInvalid, mx.MemoryMB)
		}
		if req.MemoryMB%2 != 0 {
			return r, fmt.Errorf("%w: memoryMB must be divisible by 2 (got %d)", sandbox.ErrInvalid, req.MemoryMB)
		}
		r.MemoryMB = req.MemoryMB
	}
	if req.MinFreeDiskMB > r.DiskSizeMB {
		r.DiskSizeMB = min(req.MinFreeDiskMB, mx.DiskSizeMB)
	}
	return r, nil
}

// buildResources are what a build's step sandboxes run with: the
// template's, at least the builder's defaults, within the node's bounds.
func (s *Service) buildResources(b *store.BuildRec) sandbox.Resources {
	mx := s.mgr.Config().Max
	return sandbox.Resources{
		CPUCount:   min(max(b.CPUCount, s.cfg.CPUCount), mx.CPUCount),
		MemoryMB:   min(max(b.MemoryMB, s.cfg.MemoryMB), mx.MemoryMB),
		DiskSizeMB: min(max(b.DiskSizeMB, s.cfg.DiskSizeMB), mx.DiskSizeMB),
	}
}

// templateFor returns team's template named name, creating it (its owner
// row first, so no reload ever sees it as the default team's). Hold
// s.names.
func (s *Service) templateFor(ctx context.Context, team, name string) (*store.TemplateRec, error) {
	if t, ok := s.reg.lookupIn(team, name); ok && s.reg.TeamOf(t.ID) == team {
		return t, nil
	}
	now := time.Now().UTC()
	t := &store.TemplateRec{ID: newTemplateID(), Names: []string{name}, CreatedAt: now, UpdatedAt: now}
	if team != "" {
		if err := s.st.SetTemplateOwner(ctx, t.ID, team); err != nil {
			return nil, err
		}
	}
	return t, s.st.PutTemplate(ctx, t)
}

// newTemplateID is a 20-character lowercase id, like E2B's.
func newTemplateID() string {
	return strings.ReplaceAll(newID(), "-", "")[:20]
}

// validName accepts E2B-style names: a built-in template's name
// (template.ValidName) that does not start with '-' either.
func validName(n string) bool {
	return template.ValidName(n) && n[0] != '-'
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// uploadPath is where a template's files of hash live.
func (s *Service) uploadPath(templateID, hash string) (string, error) {
	if !validHash(hash) || !validName(templateID) {
		return "", fmt.Errorf("%w: bad files hash %q", sandbox.ErrInvalid, hash)
	}
	return filepath.Join(s.cfg.DataDir, "uploads", templateID, hash+".tar"), nil
}

// FilesPresent says whether a template's files of hash were uploaded (E2B's
// GET /templates/{id}/files/{hash}); the template must exist.
func (s *Service) FilesPresent(templateID, hash string) (bool, error) {
	if _, ok := s.reg.lookup(templateID); !ok {
		return false, sandbox.TemplateNotFound(templateID)
	}
	p, err := s.uploadPath(templateID, hash)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	return err == nil, nil
}

// MaxUploadBytes is the bound of one upload (Upload).
func (s *Service) MaxUploadBytes() int64 { return s.cfg.MaxUploadBytes }

// Upload stores a template's files of hash (a tar, gzipped or not), at most
// MaxUploadBytes; the file appears whole or not at all.
func (s *Service) Upload(templateID, hash string, r io.Reader) error {
	if _, ok := s.reg.lookup(templateID); !ok {
		return sandbox.TemplateNotFound(templateID)
	}
	p, err := s.uploadPath(templateID, hash)
	if err != nil {
		return err
	}
	if err := ensureDir(filepath.Dir(p)); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".upload-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, io.LimitReader(r, s.cfg.MaxUploadBytes+1))
	if err == nil && n > s.cfg.MaxUploadBytes {
		err = fmt.Errorf("%w: upload is larger than %d bytes", ErrTooLarge, s.cfg.MaxUploadBytes)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// ErrTooLarge marks an upload past the bound (413).
var ErrTooLarge = errors.New("too large")
