package api

import (
	"encoding/json"
	"time"

	"github.com/sbx-dev/sbx/internal/store"
)

// EnvdVersion is the envd version the agent is compatible with. The SDK gates
// features on it; 0.6.4 unlocks all of them.
const EnvdVersion = "0.6.4"

// networkConfig is E2B's SandboxNetworkConfig.
type networkConfig struct {
	AllowOut           []string        `json:"allowOut,omitempty"`
	DenyOut            []string        `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool           `json:"allowPublicTraffic,omitempty"`
	MaskRequestHost    *string         `json:"maskRequestHost,omitempty"`
	HTTPSPorts         []int           `json:"httpsPorts,omitempty"`
	Rules              json.RawMessage `json:"rules,omitempty"`
	EgressProxy        json.RawMessage `json:"egressProxy,omitempty"`
}

// newSandbox is the union of E2B's NewSandboxV2 and v1 NewSandbox bodies plus
// the sbx extensions runtime, cpuCount, memoryMB and diskSizeMB.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	EnvVars             map[string]string `json:"envVars,omitempty"`
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Network             *networkConfig    `json:"network,omitempty"`
	AutoPause           *bool             `json:"autoPause,omitempty"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory,omitempty"`
	AutoResume          json.RawMessage   `json:"autoResume,omitempty"`
	Secure              *bool             `json:"secure,omitempty"`
	MCP                 json.RawMessage   `json:"mcp,omitempty"`
	IAM                 json.RawMessage   `json:"iam,omitempty"`
	VolumeMounts        []volumeMount     `json:"volumeMounts,omitempty"`
	Runtime             string            `json:"runtime,omitempty"`
	CPUCount            int               `json:"cpuCount,omitempty"`
	MemoryMB            int               `json:"memoryMB,omitempty"`
	DiskSizeMB          int               `json:"diskSizeMB,omitempty"`
}

// sandboxResp is E2B's Sandbox (create/connect response).
type sandboxResp struct {
	SandboxID          string  `json:"sandboxID"`
	TemplateID         string  `json:"templateID"`
	Alias              string  `json:"alias,omitempty"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// listedSandbox is E2B's ListedSandbox; detail adds SandboxDetail's fields.
type listedSandbox struct {
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
	State       string            `json:"state"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Runtime     string            `json:"runtime,omitempty"`
	Volumes     []volumeMount     `json:"volumeMounts,omitempty"`
}

type sandboxDetail struct {
	listedSandbox
	Domain              *string        `json:"domain"`
	EnvdAccessToken     string         `json:"envdAccessToken,omitempty"`
	AllowInternetAccess *bool          `json:"allowInternetAccess"`
	Network             *store.Network `json:"network,omitempty"` // Redacted
	Lifecycle           lifecycle      `json:"lifecycle"`
}

type lifecycle struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

// metric is E2B's SandboxMetric.
type metric struct {
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
