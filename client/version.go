package client

import (
	"context"
	"net/http"
)

// ServerVersion is the daemon's build (GET /sbx/version, an sbx extension).
type ServerVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Version returns the daemon's build.
func (c *Client) Version(ctx context.Context) (*ServerVersion, error) {
	var v ServerVersion
	if _, err := c.do(ctx, http.MethodGet, "/sbx/version", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
