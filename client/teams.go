package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// APIKey is a team API key as E2B's /api-keys shows it; Key is set only in
// the answer to its creation (it is stored hashed, never shown again).
type APIKey struct {
	ID   string `json:"id"`
	Key  string `json:"key,omitempty"`
	Name string `json:"name"`
	Mask struct {
		Prefix            string `json:"prefix"`
		MaskedValueSuffix string `json:"maskedValueSuffix"`
	} `json:"mask"`
	CreatedAt time.Time  `json:"createdAt"`
	LastUsed  *time.Time `json:"lastUsed"`
}

// APIKeys lists the keys of the caller's team.
func (c *Client) APIKeys(ctx context.Context) ([]APIKey, error) {
	var out []APIKey
	_, err := c.do(ctx, http.MethodGet, "/api-keys", nil, &out)
	return out, err
}

// CreateAPIKey mints a key of the caller's team.
func (c *Client) CreateAPIKey(ctx context.Context, name string) (*APIKey, error) {
	var out APIKey
	if _, err := c.do(ctx, http.MethodPost, "/api-keys", map[string]string{"name": name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteAPIKey revokes a key of the caller's team.
func (c *Client) DeleteAPIKey(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/api-keys/"+url.PathEscape(id), nil, nil)
	return err
}

// Team is a team as the admin's /sbx/teams shows it.
type Team struct {
	TeamID    string         `json:"teamID"`
	Name      string         `json:"name"`
	APIKey    string         `json:"apiKey,omitempty"` // only in the answer to its creation
	CreatedAt time.Time      `json:"createdAt"`
	Keys      int            `json:"keys"`
	Owns      map[string]int `json:"owns,omitempty"`
	Quota     map[string]any `json:"quota,omitempty"`
}

// CreateTeam creates a team and its first key (admin key only).
func (c *Client) CreateTeam(ctx context.Context, name string) (*Team, error) {
	var out Team
	if _, err := c.do(ctx, http.MethodPost, "/sbx/teams", map[string]string{"name": name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Teams lists every team (admin key only).
func (c *Client) Teams(ctx context.Context) ([]Team, error) {
	var out []Team
	_, err := c.do(ctx, http.MethodGet, "/sbx/teams", nil, &out)
	return out, err
}

// DeleteTeam removes a team that owns nothing and revokes its keys.
func (c *Client) DeleteTeam(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/sbx/teams/"+url.PathEscape(id), nil, nil)
	return err
}
