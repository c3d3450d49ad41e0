package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/telemetry"
)

// newTelemetryServer serves the API with a telemetry store fed by the
// manager's lifecycle events (the collector is not run: tests add samples).
func newTelemetryServer(t *testing.T) (*httptest.Server, *telemetry.Store) {
	t.Helper()
	tel := telemetry.New(telemetry.DefaultLimits)
	a, _ := newAPI(t, func(c *sandbox.Config) { c.Events = tel })
	a.SetTelemetry(tel)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return srv, tel
}

// getJSON GETs path and decodes the body into out.
func getJSON(t *testing.T, srv *httptest.Server, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

func createSandbox(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	code, sb := do(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base"}`, nil)
	if code != 201 {
		t.Fatalf("create = %d %v", code, sb)
	}
	return sb["sandboxID"].(string)
}

func TestMetricsWindow(t *testing.T) {
	srv, tel := newTelemetryServer(t)
	id := createSandbox(t, srv)
	var fresh []map[string]any // no sample taken yet: one now
	if code := getJSON(t, srv, "/sandboxes/"+id+"/metrics", &fresh); code != 200 || len(fresh) != 1 {
		t.Fatalf("fresh sandbox metrics = %d %v", code, fresh)
	}
	past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	if code := getJSON(t, srv, "/sandboxes/"+id+"/metrics?start="+past+"&end="+past, &fresh); code != 200 || len(fresh) != 0 {
		t.Fatalf("past window of a fresh sandbox = %d %v", code, fresh)
	}
	base := time.Now().Truncate(telemetry.Step)
	for i := range 4 {
		tel.Record(id, telemetry.Sample{Time: base.Add(time.Duration(i) * telemetry.Step), CPUCount: 1, MemUsed: int64(i + 1), MemTotal: 256 << 20})
	}
	u := func(d time.Duration) string { return strconv.FormatInt(base.Add(d).Unix(), 10) }
	tests := []struct {
		query string
		code  int
		n     int
	}{
		{"", 200, 4},
		{"?start=" + u(telemetry.Step) + "&end=" + u(2*telemetry.Step), 200, 2},
		{"?start=" + u(3*telemetry.Step), 200, 1},
		{"?start=" + u(-time.Hour) + "&end=" + u(-30*time.Minute), 200, 0}, // before it existed
		{"?start=" + u(time.Minute) + "&end=" + u(0), 400, 0},
		{"?start=yesterday", 400, 0},
		{"?end=-5", 400, 0},
	}
	for _, tc := range tests {
		var got []map[string]any
		code := getJSON(t, srv, "/sandboxes/"+id+"/metrics"+tc.query, &got)
		if code != tc.code || len(got) != tc.n {
			t.Errorf("metrics%s = %d with %d samples, want %d with %d", tc.query, code, len(got), tc.code, tc.n)
		}
		if tc.n > 0 && (got[0]["timestampUnix"] == nil || got[0]["memTotal"] != float64(256<<20) || got[0]["timestamp"] == nil) {
			t.Errorf("sample shape: %v", got[0])
		}
	}
	if code := getJSON(t, srv, "/sandboxes/nosuchsandbox0000000/metrics", nil); code != 404 {
		t.Errorf("unknown sandbox: %d", code)
	}
}

func TestBulkMetrics(t *testing.T) {
	srv, tel := newTelemetryServer(t)
	a, b := createSandbox(t, srv), createSandbox(t, srv)
	tel.Record(a, telemetry.Sample{Time: time.Now(), MemUsed: 1})
	tel.Record(a, telemetry.Sample{Time: time.Now(), MemUsed: 2})
	tel.Record(b, telemetry.Sample{Time: time.Now(), MemUsed: 3})
	var got struct {
		Sandboxes map[string]map[string]any `json:"sandboxes"`
	}
	for _, q := range []string{"sandbox_ids=" + a + "," + b + ",unknown", "sandbox_ids=" + a + "&sandbox_ids=" + b} {
		if code := getJSON(t, srv, "/sandboxes/metrics?"+q, &got); code != 200 || len(got.Sandboxes) != 2 || got.Sandboxes[a]["memUsed"] != float64(2) {
			t.Fatalf("bulk %s = %d %v", q, code, got)
		}
	}
	if code := getJSON(t, srv, "/sandboxes/metrics", nil); code != 400 {
		t.Errorf("no ids: %d", code)
	}
	var many []string
	for i := range 101 {
		many = append(many, "id"+strconv.Itoa(i))
	}
	if code := getJSON(t, srv, "/sandboxes/metrics?sandbox_ids="+strings.Join(many, ","), nil); code != 400 {
		t.Errorf("too many ids: %d", code)
	}
}

func TestTeams(t *testing.T) {
	srv, _ := newTelemetryServer(t)
	var teams []map[string]any
	if code := getJSON(t, srv, "/teams", &teams); code != 200 || len(teams) != 1 || teams[0]["teamID"] != telemetry.DefaultTeam || teams[0]["isDefault"] != true {
		t.Fatalf("teams = %d %v", code, teams)
	}
	var series []map[string]any
	if code := getJSON(t, srv, "/teams/"+telemetry.DefaultTeam+"/metrics", &series); code != 200 || series == nil {
		t.Fatalf("team metrics = %d %v", code, series)
	}
	var max map[string]any
	if code := getJSON(t, srv, "/teams/"+telemetry.DefaultTeam+"/metrics/max?metric=concurrent_sandboxes", &max); code != 200 || max["value"] == nil || max["timestampUnix"] == nil {
		t.Fatalf("max = %d %v", code, max)
	}
	for path, want := range map[string]int{
		"/teams/" + telemetry.DefaultTeam + "/metrics/max":              400,
		"/teams/" + telemetry.DefaultTeam + "/metrics/max?metric=bogus": 400,
		"/teams/someone-else/metrics":                                   403,
		"/teams/someone-else/metrics/max?metric=concurrent_sandboxes":   403,
	} {
		if code := getJSON(t, srv, path, nil); code != want {
			t.Errorf("%s = %d, want %d", path, code, want)
		}
	}
}

func TestLogs(t *testing.T) {
	srv, tel := newTelemetryServer(t)
	id := createSandbox(t, srv)
	now := time.Now()
	tel.Log(id, telemetry.Entry{Time: now.Add(time.Second), Level: telemetry.Error, Logger: "processSvc", Message: "Process exited with an error",
		Fields: map[string]string{"exit_code": "3", "level": "debug", "message": "spoofed"}})
	if code, _ := do(t, srv, "DELETE", "/sandboxes/"+id, "", nil); code != 204 {
		t.Fatalf("kill = %d", code)
	}
	type entry struct {
		Timestamp time.Time         `json:"timestamp"`
		Level     string            `json:"level"`
		Message   string            `json:"message"`
		Fields    map[string]string `json:"fields"`
	}
	var v2 struct{ Logs []entry }
	if code := getJSON(t, srv, "/v2/sandboxes/"+id+"/logs", &v2); code != 200 || len(v2.Logs) != 3 {
		t.Fatalf("v2 = %d %+v", code, v2)
	}
	if v2.Logs[0].Message != "Sandbox created" || v2.Logs[2].Message != "Process exited with an error" || v2.Logs[2].Fields["exit_code"] != "3" {
		t.Errorf("v2 logs after kill: %+v", v2.Logs)
	}
	if !strings.HasPrefix(v2.Logs[1].Message, "Sandbox killed") {
		t.Errorf("no kill entry: %+v", v2.Logs[1])
	}
	for q, want := range map[string]int{"level=error": 1, "level=warn&limit=5": 1, "direction=backward&limit=1": 1, "search=killed": 1,
		"cursor=" + strconv.FormatInt(now.Add(time.Second).UnixMilli(), 10): 1} {
		if code := getJSON(t, srv, "/v2/sandboxes/"+id+"/logs?"+q, &v2); code != 200 || len(v2.Logs) != want {
			t.Errorf("v2?%s = %d with %d entries, want %d", q, code, len(v2.Logs), want)
		}
	}
	for _, q := range []string{"level=loud", "direction=sideways", "limit=-1", "limit=5000", "cursor=x"} {
		if code := getJSON(t, srv, "/v2/sandboxes/"+id+"/logs?"+q, nil); code != 400 {
			t.Errorf("v2?%s = %d, want 400", q, code)
		}
	}
	var v1 struct {
		Logs []struct {
			Timestamp time.Time `json:"timestamp"`
			Line      string    `json:"line"`
		} `json:"logs"`
		LogEntries []entry `json:"logEntries"`
	}
	if code := getJSON(t, srv, "/sandboxes/"+id+"/logs?start="+strconv.FormatInt(now.Add(time.Second).UnixMilli(), 10), &v1); code != 200 || len(v1.Logs) != 1 || len(v1.LogEntries) != 1 {
		t.Fatalf("v1 = %d %+v", code, v1)
	}
	var line map[string]string // what `e2b sandbox logs` parses
	if err := json.Unmarshal([]byte(v1.Logs[0].Line), &line); err != nil || line["level"] != "error" || line["logger"] != "processSvc" ||
		line["message"] != "Process exited with an error" || line["exit_code"] != "3" {
		t.Errorf("line %q: %v %v", v1.Logs[0].Line, line, err)
	}
	if code := getJSON(t, srv, "/v2/sandboxes/nosuchsandbox0000000/logs", nil); code != 404 {
		t.Errorf("unknown sandbox logs: %d", code)
	}
}
