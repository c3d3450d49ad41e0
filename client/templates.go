package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// This file is a client of E2B's template build API (build system v2): the
// routes and JSON shapes the E2B SDKs' Template.build uses.

// TemplateBuildRequest is the body of POST /v3/templates (E2B's
// TemplateBuildRequestV3). Zero fields are left out.
type TemplateBuildRequest struct {
	Name     string   `json:"name"` // "name" or "name:tag"
	Tags     []string `json:"tags,omitempty"`
	CPUCount int      `json:"cpuCount,omitempty"`
	MemoryMB int      `json:"memoryMB,omitempty"`
}

// TemplateBuild is the answer of RequestTemplateBuild (E2B's
// TemplateRequestResponseV3).
type TemplateBuild struct {
	TemplateID string   `json:"templateID"`
	BuildID    string   `json:"buildID"`
	Names      []string `json:"names"`
	Tags       []string `json:"tags"`
	Aliases    []string `json:"aliases"`
	Public     bool     `json:"public"`
}

// TemplateStep is one build step (E2B's TemplateStep): RUN, COPY, ENV,
// WORKDIR or USER with its args; COPY carries the hash of its files.
type TemplateStep struct {
	Type      string   `json:"type"`
	Args      []string `json:"args"`
	FilesHash string   `json:"filesHash,omitempty"`
	Force     bool     `json:"force"`
}

// TemplateSpec is the body of StartTemplateBuild (E2B's
// TemplateBuildStartV2).
type TemplateSpec struct {
	FromImage    string         `json:"fromImage,omitempty"`
	FromTemplate string         `json:"fromTemplate,omitempty"`
	StartCmd     string         `json:"startCmd,omitempty"`
	ReadyCmd     string         `json:"readyCmd,omitempty"`
	Force        bool           `json:"force"`
	Steps        []TemplateStep `json:"steps"`
}

// FileUpload says whether the daemon has the files of a COPY step already
// and, if not, where to PUT them (E2B's TemplateBuildFileUpload).
type FileUpload struct {
	Present bool              `json:"present"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// BuildLogEntry is one line of a build's log.
type BuildLogEntry struct {
	Timestamp time.Time `json:"timestamp"`
	Level     string    `json:"level"` // debug, info, warn, error
	Message   string    `json:"message"`
	Step      string    `json:"step,omitempty"`
}

// BuildReason says why a build failed.
type BuildReason struct {
	Message    string          `json:"message"`
	Step       string          `json:"step,omitempty"`
	LogEntries []BuildLogEntry `json:"logEntries,omitempty"`
}

// BuildStatus is a build's state and the log entries after the offset
// asked for (E2B's TemplateBuildInfo).
type BuildStatus struct {
	TemplateID string          `json:"templateID"`
	BuildID    string          `json:"buildID"`
	Status     string          `json:"status"` // building, waiting, ready, error
	LogEntries []BuildLogEntry `json:"logEntries"`
	Logs       []string        `json:"logs"`
	Reason     *BuildReason    `json:"reason,omitempty"`
}

// Done reports whether the build has finished (ready or error).
func (s *BuildStatus) Done() bool { return s.Status == "ready" || s.Status == "error" }

// RequestTemplateBuild registers a build of the template named req.Name
// (POST /v3/templates).
func (c *Client) RequestTemplateBuild(ctx context.Context, req TemplateBuildRequest) (*TemplateBuild, error) {
	var b TemplateBuild
	if _, err := c.do(ctx, http.MethodPost, "/v3/templates", req, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// TemplateFileUpload asks whether the files with hash are cached for
// templateID (GET /templates/{templateID}/files/{hash}).
func (c *Client) TemplateFileUpload(ctx context.Context, templateID, hash string) (*FileUpload, error) {
	var u FileUpload
	path := "/templates/" + url.PathEscape(templateID) + "/files/" + url.PathEscape(hash)
	if _, err := c.do(ctx, http.MethodGet, path, nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// StartTemplateBuild starts the build with its steps (POST
// /v2/templates/{templateID}/builds/{buildID}), once the files of its COPY
// steps are uploaded.
func (c *Client) StartTemplateBuild(ctx context.Context, templateID, buildID string, spec TemplateSpec) error {
	if spec.Steps == nil {
		spec.Steps = []TemplateStep{}
	}
	path := "/v2/templates/" + url.PathEscape(templateID) + "/builds/" + url.PathEscape(buildID)
	_, err := c.do(ctx, http.MethodPost, path, spec, nil)
	return err
}

// TemplateBuildStatus returns the state of a build and its log entries from
// logsOffset on (GET /templates/{templateID}/builds/{buildID}/status).
func (c *Client) TemplateBuildStatus(ctx context.Context, templateID, buildID string, logsOffset int) (*BuildStatus, error) {
	var s BuildStatus
	path := "/templates/" + url.PathEscape(templateID) + "/builds/" + url.PathEscape(buildID) +
		"/status?logsOffset=" + strconv.Itoa(logsOffset)
	if _, err := c.do(ctx, http.MethodGet, path, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// UploadTemplateFiles PUTs the gzipped tar of a COPY step's files (size
// bytes read from body) to u.URL, which is absolute or relative to the
// daemon's URL, with u.Headers. The API key goes along only to the
// daemon's own origin.
func (c *Client) UploadTemplateFiles(ctx context.Context, u *FileUpload, body io.Reader, size int64) error {
	target, err := c.resolve(u.URL)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target.String(), body)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	req.ContentLength = size
	for k, v := range u.Headers {
		if http.CanonicalHeaderKey(k) != "Content-Length" {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set("User-Agent", c.userAgent)
	if base, _ := url.Parse(c.baseURL); base != nil && base.Scheme == target.Scheme && base.Host == target.Host {
		req.Header.Set("X-API-Key", c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("PUT %s: %w", target.Path, err)
	}
	defer resp.Body.Close()
	if err := decodeResponse(resp, nil); err != nil {
		return fmt.Errorf("PUT %s: %w", target.Path, err)
	}
	return nil
}

// resolve makes ref absolute against the daemon's URL.
func (c *Client) resolve(ref string) (*url.URL, error) {
	if ref == "" {
		return nil, fmt.Errorf("%w: the daemon gave no upload URL", ErrBadRequest)
	}
	base, err := url.Parse(c.baseURL + "/")
	if err != nil {
		return nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	return base.ResolveReference(r), nil
}

// TemplateInfo is one item of ListTemplates: E2B's full Template record
// (Templates returns the fields sandbox creation needs).
type TemplateInfo struct {
	TemplateID    string     `json:"templateID"`
	BuildID       string     `json:"buildID"`
	Names         []string   `json:"names"`
	Aliases       []string   `json:"aliases"`
	Public        bool       `json:"public"`
	BuildStatus   string     `json:"buildStatus"`
	CPUCount      int        `json:"cpuCount"`
	MemoryMB      int        `json:"memoryMB"`
	DiskSizeMB    int        `json:"diskSizeMB"`
	EnvdVersion   string     `json:"envdVersion"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	LastSpawnedAt *time.Time `json:"lastSpawnedAt"`
	SpawnCount    int        `json:"spawnCount"`
	BuildCount    int        `json:"buildCount"`
}

// TemplateDetail is a template with its builds (E2B's TemplateWithBuilds).
type TemplateDetail struct {
	TemplateID    string             `json:"templateID"`
	Names         []string           `json:"names"`
	Aliases       []string           `json:"aliases"`
	Public        bool               `json:"public"`
	CreatedAt     time.Time          `json:"createdAt"`
	UpdatedAt     time.Time          `json:"updatedAt"`
	LastSpawnedAt *time.Time         `json:"lastSpawnedAt"`
	SpawnCount    int                `json:"spawnCount"`
	Builds        []TemplateBuildRef `json:"builds"`
}

// TemplateBuildRef is one build of a template (E2B's TemplateBuild).
type TemplateBuildRef struct {
	BuildID    string     `json:"buildID"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	CPUCount   int        `json:"cpuCount"`
	MemoryMB   int        `json:"memoryMB"`
}

// TemplateAlias is the answer of TemplateByAlias: E2B's fields, then
// sbx's own (absent from E2B): the user and working directory the
// template's sandboxes and child builds start with.
type TemplateAlias struct {
	TemplateID string `json:"templateID"`
	Public     bool   `json:"public"`
	User       string `json:"user,omitempty"`
	Workdir    string `json:"workdir,omitempty"`
}

// ListTemplates returns the templates with their build and usage records
// (GET /templates).
func (c *Client) ListTemplates(ctx context.Context) ([]TemplateInfo, error) {
	ts := []TemplateInfo{}
	if _, err := c.do(ctx, http.MethodGet, "/templates", nil, &ts); err != nil {
		return nil, err
	}
	return ts, nil
}

// GetTemplate returns a template and its builds (GET /templates/{id}).
func (c *Client) GetTemplate(ctx context.Context, templateID string) (*TemplateDetail, error) {
	var t TemplateDetail
	if _, err := c.do(ctx, http.MethodGet, "/templates/"+url.PathEscape(templateID), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTemplate removes a template (DELETE /templates/{id}).
func (c *Client) DeleteTemplate(ctx context.Context, templateID string) error {
	_, err := c.do(ctx, http.MethodDelete, "/templates/"+url.PathEscape(templateID), nil, nil)
	return err
}

// TemplateByAlias resolves a template name (GET /templates/aliases/{alias});
// an unknown one is an error matching ErrNotFound.
func (c *Client) TemplateByAlias(ctx context.Context, alias string) (*TemplateAlias, error) {
	var a TemplateAlias
	if _, err := c.do(ctx, http.MethodGet, "/templates/aliases/"+url.PathEscape(alias), nil, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// FollowTemplateBuild polls a build's status every interval until it ends,
// handing each batch of new log entries to logs, then polls on while
// entries still come (as the SDK does). It returns the final status.
func (c *Client) FollowTemplateBuild(ctx context.Context, templateID, buildID string, interval time.Duration, logs func([]BuildLogEntry)) (*BuildStatus, error) {
	offset := 0
	for {
		st, err := c.TemplateBuildStatus(ctx, templateID, buildID, offset)
		if err != nil {
			return nil, err
		}
		offset += len(st.LogEntries)
		logs(st.LogEntries)
		if st.Done() && len(st.LogEntries) == 0 {
			return st, nil
		}
		if !st.Done() {
			if err := sleep(ctx, interval); err != nil {
				return nil, err
			}
		}
	}
}
