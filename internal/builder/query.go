package builder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template"
)

// Status is E2B's TemplateBuildInfo.
type Status struct {
	TemplateID string     `json:"templateID"`
	BuildID    string     `json:"buildID"`
	Status     string     `json:"status"`
	LogEntries []LogEntry `json:"logEntries"`
	Logs       []string   `json:"logs"`
	Reason     *Reason    `json:"reason,omitempty"`
}

// Reason is E2B's BuildStatusReason.
type Reason struct {
	Message    string     `json:"message"`
	Step       string     `json:"step,omitempty"`
	LogEntries []LogEntry `json:"logEntries"`
}

var levels = map[string]int{"debug": 0, "info": 1, "warn": 2, "error": 3}

// BuildStatus returns a build's status and its log entries from offset
// (entries below level are left out).
func (s *Service) BuildStatus(ctx context.Context, templateID, buildID string, offset int, level string) (*Status, error) {
	b, ok := s.reg.build(buildID) // the index: "ready" once the template resolves
	if !ok || b.TemplateID != templateID {
		return nil, sandbox.NotFound("build %.64q of template %.64q not found", buildID, templateID)
	}
	all := s.logsOf(buildID)
	min, ok := levels[level]
	if level != "" && !ok {
		return nil, fmt.Errorf("%w: level must be debug, info, warn or error", sandbox.ErrInvalid)
	}
	out := &Status{TemplateID: templateID, BuildID: buildID, Status: b.Status, LogEntries: []LogEntry{}, Logs: []string{}}
	for i := max(offset, 0); i < len(all); i++ {
		if levels[all[i].Level] >= min {
			out.LogEntries = append(out.LogEntries, all[i])
		}
	}
	if b.Status == "error" {
		out.Reason = &Reason{Message: b.Reason, Step: b.ReasonStep, LogEntries: tail(all, 20)}
	}
	return out, nil
}

func tail(es []LogEntry, n int) []LogEntry {
	if len(es) > n {
		es = es[len(es)-n:]
	}
	return append([]LogEntry{}, es...)
}

// Info is a template as E2B's list and get answer it.
type Info struct {
	TemplateID    string      `json:"templateID"`
	BuildID       string      `json:"buildID"`
	Names         []string    `json:"names"`
	Aliases       []string    `json:"aliases"`
	Public        bool        `json:"public"`
	BuildStatus   string      `json:"buildStatus"`
	BuildCount    int         `json:"buildCount"`
	CPUCount      int         `json:"cpuCount"`
	MemoryMB      int         `json:"memoryMB"`
	DiskSizeMB    int         `json:"diskSizeMB"`
	EnvdVersion   string      `json:"envdVersion"`
	CreatedAt     time.Time   `json:"createdAt"`
	UpdatedAt     time.Time   `json:"updatedAt"`
	LastSpawnedAt *time.Time  `json:"lastSpawnedAt"`
	SpawnCount    int64       `json:"spawnCount"`
	CreatedBy     *struct{}   `json:"createdBy"`
	Builds        []BuildInfo `json:"builds,omitempty"`
	Tags          []string    `json:"tags,omitempty"`
	Runtime       string      `json:"runtime,omitempty"`
}

// BuildInfo is E2B's TemplateBuild.
type BuildInfo struct {
	BuildID     string     `json:"buildID"`
	Status      string     `json:"status"`
	CPUCount    int        `json:"cpuCount"`
	MemoryMB    int        `json:"memoryMB"`
	DiskSizeMB  int        `json:"diskSizeMB"`
	EnvdVersion string     `json:"envdVersion"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	FinishedAt  *time.Time `json:"finishedAt,omitempty"`
}

// EnvdVersion is what templates' sandboxes report (api.EnvdVersion).
const EnvdVersion = "0.6.4"

// List returns every template: built-in ones, then user templates.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	return s.ListFor(ctx, func(string, bool) bool { return true })
}

// ListFor is List of the built-ins and the user templates keep takes, by
// their owning team ("" the default team's) and visibility, decided before
// any of their builds is read: a list of one team's reach costs a read per
// template in it, not per template on the node (every team's GET
// /templates read the builds of every team's templates, and another
// team's 1000 private templates made it 0.17 s, 1.5 ms before them).
func (s *Service) ListFor(ctx context.Context, keep func(owner string, public bool) bool) ([]Info, error) {
	s.flushSpawns(ctx)
	out, err := s.builtIns()
	if err != nil {
		return nil, err
	}
	ts, err := s.st.Templates(ctx)
	if err != nil {
		return nil, err
	}
	owners, err := s.st.TemplateOwners(ctx)
	if err != nil {
		return nil, err
	}
	ts = slices.DeleteFunc(ts, func(t *store.TemplateRec) bool { return !keep(owners[t.ID], t.Public) })
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	builds, err := s.st.BuildsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	tags, err := s.st.TagsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		out = append(out, *s.infoFrom(t, builds[t.ID], tags[t.ID], false))
	}
	return out, nil
}

func (s *Service) builtIns() ([]Info, error) {
	bts, err := s.reg.Builtins.List()
	if err != nil {
		return nil, err
	}
	d := s.mgr.Config().Defaults
	var out []Info
	for _, bt := range bts {
		mem := d.MemoryMB
		if bt.MemoryMB > 0 { // what its sandboxes get (code-interpreter-v1: 1024)
			mem = bt.MemoryMB
		}
		out = append(out, Info{TemplateID: bt.Name, BuildID: bt.BuildID, Names: []string{bt.Name}, Aliases: []string{bt.Name},
			Public: true, BuildStatus: "ready", BuildCount: 1, CPUCount: d.CPUCount, MemoryMB: mem, DiskSizeMB: d.DiskSizeMB,
			EnvdVersion: EnvdVersion, CreatedAt: bt.Created, UpdatedAt: bt.Created, Runtime: bt.Runtime})
	}
	return out, nil
}

// info describes t; with builds, every build is listed.
func (s *Service) info(ctx context.Context, t *store.TemplateRec, withBuilds bool) (*Info, error) {
	bs, err := s.st.Builds(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	tags, err := s.st.Tags(ctx, t.ID)
	return s.infoFrom(t, bs, tags, withBuilds), err
}

// infoFrom describes t from its builds bs and tags.
func (s *Service) infoFrom(t *store.TemplateRec, bs []*store.BuildRec, tags []store.TagRec, withBuilds bool) *Info {
	d := s.mgr.Config().Defaults
	in := &Info{TemplateID: t.ID, Names: t.Names, Aliases: t.Names, Public: t.Public, BuildCount: len(bs),
		CPUCount: d.CPUCount, MemoryMB: d.MemoryMB, DiskSizeMB: d.DiskSizeMB, EnvdVersion: EnvdVersion,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, SpawnCount: t.SpawnCount, BuildStatus: "waiting"}
	if !t.LastSpawnedAt.IsZero() {
		in.LastSpawnedAt = &t.LastSpawnedAt
	}
	if _, b, err := s.reg.resolveBuild(t.ID); err == nil {
		in.BuildID, in.BuildStatus, in.CPUCount, in.MemoryMB = b.ID, b.Status, b.CPUCount, b.MemoryMB
	} else if len(bs) > 0 {
		last := bs[len(bs)-1]
		in.BuildID, in.BuildStatus = last.ID, last.Status
	}
	for _, b := range bs {
		if withBuilds {
			in.Builds = append(in.Builds, buildInfo(b))
		}
	}
	for _, tg := range tags {
		in.Tags = append(in.Tags, tg.Tag)
	}
	return in
}

func buildInfo(b *store.BuildRec) BuildInfo {
	bi := BuildInfo{BuildID: b.ID, Status: b.Status, CPUCount: b.CPUCount, MemoryMB: b.MemoryMB, DiskSizeMB: b.DiskSizeMB,
		EnvdVersion: EnvdVersion, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if !b.FinishedAt.IsZero() {
		bi.FinishedAt = &b.FinishedAt
	}
	return bi
}

// Get returns one template by id or name, with its builds.
func (s *Service) Get(ctx context.Context, ref string) (*Info, error) {
	s.flushSpawns(ctx)
	if t, ok := s.reg.lookup(ref); ok {
		in, err := s.info(ctx, t, true)
		if in != nil && in.Builds == nil {
			in.Builds = []BuildInfo{}
		}
		return in, err
	}
	bi, err := s.builtIns()
	if err != nil {
		return nil, err
	}
	for _, in := range bi {
		if in.TemplateID == ref {
			in.Builds = []BuildInfo{{BuildID: in.BuildID, Status: "ready", CPUCount: in.CPUCount, MemoryMB: in.MemoryMB,
				DiskSizeMB: in.DiskSizeMB, EnvdVersion: EnvdVersion, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt}}
			return &in, nil
		}
	}
	return nil, sandbox.TemplateNotFound(ref)
}

// flushSpawns writes the creates counted since the last flush into the
// template records (under s.names: no update or delete interleaves).
func (s *Service) flushSpawns(ctx context.Context) {
	s.names.Lock()
	defer s.names.Unlock()
	if err := s.reg.FlushSpawns(ctx); err != nil {
		s.log.Warn("record template spawn counts", "err", err)
	}
}

// Alias answers E2B's GET /templates/aliases/{alias} for team: its own
// template's name, "namespace/name" of a public one (or its own), or a
// built-in's (lookupIn).
func (s *Service) Alias(team, alias string) (templateID string, public bool, err error) {
	if t, ok := s.reg.lookupIn(team, alias); ok {
		return t.ID, t.Public, nil
	}
	if s.reg.reloadOnMiss(sandbox.ErrNotFound) { // made through another node since the last reload
		if t, ok := s.reg.lookupIn(team, alias); ok {
			return t.ID, t.Public, nil
		}
	}
	if bt, err := s.reg.Builtins.Get(alias); err == nil {
		return bt.Name, true, nil
	}
	if template.Building(s.reg.Builtins.Dir, alias) { // a built-in on its way: public, and creates get 503 (Registry.absent)
		return alias, true, nil
	}
	return "", false, sandbox.TemplateNotFound(alias)
}

// Update sets a template's visibility (E2B's PATCH /templates/{id}).
func (s *Service) Update(ctx context.Context, ref string, public *bool) ([]string, error) {
	s.names.Lock()
	defer s.names.Unlock()
	t, ok := s.reg.lookup(ref)
	if !ok {
		if _, err := s.reg.Builtins.Get(ref); err == nil {
			return nil, fmt.Errorf("%w: built-in templates cannot be changed", sandbox.ErrInvalid)
		}
		return nil, sandbox.TemplateNotFound(ref)
	}
	c := *t
	if public != nil {
		c.Public = *public
	}
	c.UpdatedAt = time.Now().UTC()
	if err := s.st.PutTemplate(ctx, &c); err != nil {
		return nil, err
	}
	return c.Names, s.reg.Reload(ctx)
}

// Delete removes a template, its builds and tags; running sandboxes keep
// their layers (GC frees them once nothing uses them).
func (s *Service) Delete(ctx context.Context, ref string) error {
	s.names.Lock()
	defer s.names.Unlock()
	t, ok := s.reg.lookup(ref)
	if !ok {
		return s.missing(ref, "deleted")
	}
	s.mu.Lock()
	for id, cancel := range s.cancels { // its builds in progress stop
		if b, err := s.st.Build(ctx, id); err == nil && b.TemplateID == t.ID {
			cancel()
		}
	}
	s.mu.Unlock()
	if err := s.st.DeleteTemplate(ctx, t.ID); err != nil {
		return err
	}
	s.wg.Add(1)
	go func() { // after s.names is released: GC takes it
		defer s.wg.Done()
		if _, err := s.GC(context.Background()); err != nil {
			s.log.Warn("template GC after delete", "err", err)
		}
	}()
	return s.reg.Reload(ctx)
}

// missing is the error for a template name the registry does not hold: a
// built-in one is not changed through the API (what: "deleted", "tagged"),
// anything else is not found.
func (s *Service) missing(name, what string) error {
	if s.reg.Builtins == nil {
		return sandbox.TemplateNotFound(name)
	}
	if _, err := s.reg.Builtins.Get(name); err == nil {
		return fmt.Errorf("%w: built-in templates are managed with `sbx template build`, not %s through the API", sandbox.ErrNotImpl, what)
	}
	return sandbox.TemplateNotFound(name)
}

// AssignTags points tags at the build target ("name:tag" or "name") names.
func (s *Service) AssignTags(ctx context.Context, target string, tags []string) (string, []string, error) {
	t, b, err := s.reg.resolveBuild(target)
	if name, _ := splitRef(target); errors.Is(err, sandbox.ErrNotFound) && !s.reg.has(name) {
		err = s.missing(name, "tagged")
	}
	if err != nil {
		return "", nil, err
	}
	if len(tags) == 0 {
		return "", nil, fmt.Errorf("%w: no tags given", sandbox.ErrInvalid)
	}
	for _, tag := range tags {
		if !validName(tag) {
			return "", nil, fmt.Errorf("%w: tag %.64q: use 1-64 of a-z, 0-9, '-', '_', '.'", sandbox.ErrInvalid, tag)
		}
	}
	s.names.Lock() // the count tagRoom takes holds until the puts
	defer s.names.Unlock()
	if err := s.tagRoom(ctx, t.ID, tags); err != nil {
		return "", nil, err
	}
	now := time.Now().UTC()
	for _, tag := range tags {
		if err := s.st.PutTag(ctx, store.TagRec{TemplateID: t.ID, Tag: tag, BuildID: b.ID, CreatedAt: now}); err != nil {
			return "", nil, err
		}
	}
	return b.ID, tags, s.reg.Reload(ctx)
}

// RemoveTags removes tags of the template name.
func (s *Service) RemoveTags(ctx context.Context, name string, tags []string) error {
	name, _, _ = strings.Cut(name, ":")
	t, ok := s.reg.lookup(name)
	if !ok {
		return s.missing(name, "tagged")
	}
	for _, tag := range tags {
		if err := s.st.DeleteTag(ctx, t.ID, tag); err != nil {
			return err
		}
	}
	return s.reg.Reload(ctx)
}

// Tags lists a template's tags. A built-in template has one, `latest`, at
// its one build (as every build gets `latest`: E2B answers a public
// template's tags to any team).
func (s *Service) Tags(ctx context.Context, ref string) ([]store.TagRec, error) {
	if t, ok := s.reg.lookup(ref); ok {
		return s.st.Tags(ctx, t.ID)
	}
	bi, err := s.builtIns()
	if err != nil {
		return nil, err
	}
	for _, in := range bi {
		if in.TemplateID == ref {
			return []store.TagRec{{TemplateID: in.TemplateID, Tag: "latest", BuildID: in.BuildID, CreatedAt: in.CreatedAt}}, nil
		}
	}
	return nil, sandbox.TemplateNotFound(ref)
}
