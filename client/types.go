package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// CreateRequest is the body of POST /v2/sandboxes (E2B's NewSandboxV2 plus
// the sbx runtime extension). Zero fields are left out, so the daemon's
// defaults apply.
type CreateRequest struct {
	TemplateID          string            `json:"templateID"`                      // "" means "base", as in the E2B SDK
	Timeout             time.Duration     `json:"-"`                               // sandbox lifetime; sent as whole seconds, rounded up
	Metadata            map[string]string `json:"metadata,omitempty"`              // used by List filters
	EnvVars             map[string]string `json:"envVars,omitempty"`               // default environment of processes
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"` // false denies all egress
	Network             *NetworkConfig    `json:"network,omitempty"`
	AutoPause           *bool             `json:"autoPause,omitempty"`
	Runtime             string            `json:"runtime,omitempty"` // sbx: "runsc", "crun" or "runc"
}

// MarshalJSON adds timeout as whole seconds (ceil), like the E2B SDK.
func (r CreateRequest) MarshalJSON() ([]byte, error) {
	type plain CreateRequest
	return json.Marshal(struct {
		plain
		Timeout int64 `json:"timeout,omitempty"`
	}{plain(r), ceilSeconds(r.Timeout)})
}

// NetworkConfig is E2B's SandboxNetworkConfig.
type NetworkConfig struct {
	AllowOut           []string `json:"allowOut,omitempty"`
	DenyOut            []string `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic,omitempty"`
	MaskRequestHost    string   `json:"maskRequestHost,omitempty"`
	HTTPSPorts         []int    `json:"httpsPorts,omitempty"`
}

// Sandbox is a created or connected sandbox (E2B's Sandbox). Its
// EnvdAccessToken authenticates sandbox traffic.
type Sandbox struct {
	SandboxID          string `json:"sandboxID"`
	TemplateID         string `json:"templateID"`
	Alias              string `json:"alias,omitempty"`
	ClientID           string `json:"clientID"`
	EnvdVersion        string `json:"envdVersion"`
	EnvdAccessToken    string `json:"envdAccessToken,omitempty"`
	TrafficAccessToken string `json:"trafficAccessToken,omitempty"`
	Domain             string `json:"domain,omitempty"`
}

// ListedSandbox is one item of List (E2B's ListedSandbox).
type ListedSandbox struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	ClientID    string            `json:"clientID"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	EnvdVersion string            `json:"envdVersion"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	State       string            `json:"state"` // "running" or "paused"
	Metadata    map[string]string `json:"metadata,omitempty"`
	Runtime     string            `json:"runtime,omitempty"` // sbx extension
}

// SandboxDetail is the result of Get (E2B's SandboxDetail).
type SandboxDetail struct {
	ListedSandbox
	Domain              string         `json:"domain,omitempty"`
	EnvdAccessToken     string         `json:"envdAccessToken,omitempty"`
	AllowInternetAccess *bool          `json:"allowInternetAccess,omitempty"`
	Network             *NetworkConfig `json:"network,omitempty"`
	Lifecycle           *Lifecycle     `json:"lifecycle,omitempty"`
}

// Lifecycle says what happens when a sandbox times out.
type Lifecycle struct {
	OnTimeout  string `json:"onTimeout"` // "kill" or "pause"
	AutoResume bool   `json:"autoResume"`
}

// Metric is one sample of a sandbox's resource use (E2B's SandboxMetric).
type Metric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// Template is one template the daemon can create sandboxes from.
type Template struct {
	TemplateID  string   `json:"templateID"`
	BuildID     string   `json:"buildID"`
	Aliases     []string `json:"aliases,omitempty"`
	Names       []string `json:"names,omitempty"`
	Public      bool     `json:"public"`
	CPUCount    int      `json:"cpuCount"`
	MemoryMB    int      `json:"memoryMB"`
	DiskSizeMB  int      `json:"diskSizeMB"`
	EnvdVersion string   `json:"envdVersion"`
	BuildStatus string   `json:"buildStatus,omitempty"`
	Runtime     string   `json:"runtime,omitempty"` // sbx extension
}

// ceilSeconds is d in whole seconds, rounded up (E2B's ceil(ms/1000)).
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// checkTimeout rejects negative durations and those that vanish in seconds.
func checkTimeout(d time.Duration, zeroOK bool) error {
	if d < 0 || (d == 0 && !zeroOK) {
		return fmt.Errorf("%w: timeout must be positive, got %v", ErrBadRequest, d)
	}
	return nil
}
