package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// maxRawBytes bounds a Raw response.
const maxRawBytes = 64 << 20

// Raw GETs path with the API key and returns the 2xx body as is (metrics
// text, debug logs, health JSON), at most 64 MiB.
func (c *Client) Raw(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.send(ctx, http.MethodGet, path, nil, false)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("GET %s: %w", path, parseAPIError(resp))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRawBytes))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return b, nil
}
