package integration

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-dev/sbx/internal/metrics"
)

// scrape GETs /metrics from base (with the API key when key) and parses it.
func scrape(t *testing.T, url string, key bool) (int, map[string]float64) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key {
		req.Header.Set("X-API-Key", apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, metrics.ParseText(string(b))
}

// TestMetricsOfARealDaemon: a create, a command and a kill through a real
// daemon move the series they should; /metrics needs the key on the API
// and not on --metrics-listen (which also has pprof); JSON logs carry the
// client's request id.
func TestMetricsOfARealDaemon(t *testing.T) {
	mAddr := freeAddr(t)
	syslogd, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer syslogd.Close()
	d := startDaemon(t, "crun", "", "--log-format", "json", "--metrics-listen", mAddr,
		"--audit-syslog", "udp://"+syslogd.LocalAddr().String())
	if code, _ := scrape(t, d.url+"/metrics", false); code != 401 {
		t.Fatalf("/metrics without key: %d", code)
	}
	_, before := scrape(t, d.url+"/metrics", true)
	req, _ := http.NewRequest("POST", d.url+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("X-Request-Id", "it-metrics-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{d: d}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-Request-Id") != "it-metrics-1" {
		t.Fatalf("create: %d %q %s", resp.StatusCode, resp.Header.Get("X-Request-Id"), b)
	}
	sb.ID = jsonField(t, b, "sandboxID")
	sb.Token = jsonField(t, b, "envdAccessToken")
	t.Cleanup(func() { d.deleteQuiet(sb.ID) })
	if out, _ := sb.run("", "echo hi", 20*time.Second); out != "hi\n" {
		t.Fatalf("run: %q", out)
	}
	_, mid := scrape(t, d.url+"/metrics", true)
	d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil)
	_, after := scrape(t, "http://"+mAddr+"/metrics", false) // no key needed there
	moved := func(m map[string]float64, k string) float64 { return m[k] - before[k] }
	for k, want := range map[string]float64{
		`sbx_sandbox_create_seconds_count{result="ok",runtime="crun",source="cold"}`: 1,
		`sbx_sandbox_create_phase_seconds_count{phase="agent",runtime="crun"}`:       1,
		`sbx_sandbox_create_phase_seconds_count{phase="runtime",runtime="crun"}`:     1,
		`sbx_sandbox_create_phase_seconds_count{phase="queue",runtime="crun"}`:       1,
		`sbx_api_request_seconds_count{code="201",route="POST /v2/sandboxes"}`:       1,
		`sbx_sandboxes{runtime="crun",state="running",template="base"}`:              1,
	} {
		if got := moved(mid, k); got != want {
			t.Errorf("%s moved by %v, want %v", k, got, want)
		}
	}
	if moved(mid, "sbx_proxy_requests_total") < 1 || moved(mid, `sbx_proxy_bytes_total{direction="out"}`) <= 0 {
		t.Errorf("proxy series did not move: %v", moved(mid, "sbx_proxy_requests_total"))
	}
	if moved(mid, `sbx_audit_write_seconds_count{result="ok"}`) < 2 || moved(mid, `sbx_store_write_seconds_count{op="put",result="ok"}`) < 2 {
		t.Errorf("audit/store write series did not move")
	}
	if after[`sbx_sandboxes{runtime="crun",state="running",template="base"}`] != 0 || after["go_goroutines"] == 0 || after[`sbx_runtime_command_seconds_count{command="delete",runtime="crun"}`] < 1 {
		t.Errorf("after kill: running=%v goroutines=%v deletes=%v", after[`sbx_sandboxes{runtime="crun",state="running",template="base"}`],
			after["go_goroutines"], after[`sbx_runtime_command_seconds_count{command="delete",runtime="crun"}`])
	}
	if code, _ := scrape(t, "http://"+mAddr+"/debug/pprof/heap?debug=1", false); code != 200 {
		t.Errorf("pprof on --metrics-listen: %d", code)
	}
	if code, _ := scrape(t, d.url+"/debug/pprof/", true); code != 404 {
		t.Errorf("pprof on the API listener: %d", code)
	}
	if !syslogSaw(syslogd, sb.ID, `"event":"created"`) {
		t.Errorf("the created record of %s never reached syslog", sb.ID)
	}
	if !strings.Contains(d.log.String(), `"request_id":"it-metrics-1"`) {
		t.Errorf("no JSON log line with the request id:\n%s", tail(d.log.String(), 2000))
	}
	checkBundle(t, d)
}

// checkBundle runs `sbx debug bundle` against d and checks what it holds.
func checkBundle(t *testing.T, d *daemon) {
	t.Helper()
	sbxBin, _ := requirements(t, "crun")
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	cmd := exec.Command(sbxBin, "debug", "bundle", "-o", out)
	cmd.Env = append(os.Environ(), "SBX_URL="+d.url, "SBX_API_KEY="+apiKey)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debug bundle: %v %s", err, b)
	}
	files := readTarGz(t, out)
	for name, want := range map[string]string{
		"sbx-debug/config.json": `"flags"`, "sbx-debug/metrics.txt": "sbx_sandbox_create_seconds",
		"sbx-debug/logs.txt": "api request", "sbx-debug/health.json": "{", "sbx-debug/version.json": "goVersion",
	} {
		if !strings.Contains(files[name], want) {
			t.Errorf("%s lacks %q: %.300s", name, want, files[name])
		}
	}
	for name, body := range files {
		if strings.Contains(body, apiKey) {
			t.Errorf("%s contains the API key", name)
		}
	}
}

// readTarGz returns the regular files of a tar.gz by name.
func readTarGz(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

// TestAuditAnchorCatchesTruncation: after a clean stop the log verifies
// against its signed checkpoints; with its newest records removed, verify
// says truncated and the daemon refuses to extend it; restored, all is well.
func TestAuditAnchorCatchesTruncation(t *testing.T) {
	dir := newDataDir(t)
	anchor := anchorDir(dir)
	d := startDaemon(t, "crun", dir)
	sb := d.create(nil)
	d.api("DELETE", "/sandboxes/"+sb.ID, nil, nil)
	d.stop(syscall.SIGTERM)
	sbxBin, _ := requirements(t, "crun")
	verify := func() (string, error) {
		out, err := exec.Command(sbxBin, "audit", "verify", "--data-dir", dir, "--anchor-dir", anchor).CombinedOutput()
		return string(out), err
	}
	if out, err := verify(); err != nil || !strings.Contains(out, "anchored by the signed checkpoint") {
		t.Fatalf("intact log: %v %s", err, out)
	}
	logPath := filepath.Join(dir, "audit.log")
	whole, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(whole), "\n")
	if err := os.WriteFile(logPath, []byte(strings.Join(lines[:len(lines)-3], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := verify(); err == nil || !strings.Contains(out, "TRUNCATED") {
		t.Fatalf("truncated log: %v %s", err, out)
	}
	sbxBin, templates := requirements(t, "crun")
	bad := launchDaemon(t, sbxBin, templates, "crun", dir, nil, nil)
	if err := bad.waitHealthy(); err == nil || !strings.Contains(bad.log.String(), "audit log truncated") {
		t.Fatalf("daemon on a truncated log: %v\n%s", err, tail(bad.log.String(), 2000))
	}
	if err := os.WriteFile(logPath, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemon(t, "crun", dir)
	d2.stop(syscall.SIGTERM)
	if out, err := verify(); err != nil {
		t.Fatalf("restored log after a restart: %v %s", err, out)
	}
}

// TestAuditRotation: a real daemon with a tiny --audit-max-mb rotates its
// audit log into segments and deletes the oldest past --audit-keep; a
// crash (SIGKILL) and a restart go on with the chain, and `sbx audit
// verify` passes across the segments, reporting the deleted ones as rotated
// away; /sbx/audit answers OK with the newest records first.
func TestAuditRotation(t *testing.T) {
	dir := newDataDir(t)
	anchor := anchorDir(dir)
	flags := []string{"--audit-max-mb", "0.01", "--audit-keep", "2", "--audit-checkpoint-every", "1s"}
	calls := func(d *daemon, n int) {
		for range n {
			if code := d.api("GET", "/sandboxes", nil, nil); code != 200 {
				t.Fatalf("list: %d", code)
			}
		}
	}
	d := startDaemon(t, "crun", dir, flags...)
	calls(d, 150)
	time.Sleep(1500 * time.Millisecond) // a checkpoint
	d.stop(syscall.SIGKILL)
	d = startDaemon(t, "crun", dir, flags...)
	calls(d, 100)
	var view struct {
		Verdict string `json:"verdict"`
		Records uint64 `json:"records"`
		First   uint64 `json:"first"`
		Newest  []struct {
			Seq uint64 `json:"seq"`
		} `json:"newest"`
	}
	if code := d.api("GET", "/sbx/audit?limit=5", nil, &view); code != 200 || view.Verdict != "OK" || view.First <= 1 ||
		len(view.Newest) != 5 || view.Newest[0].Seq <= view.Newest[4].Seq {
		t.Fatalf("audit view: %d %+v", code, view)
	}
	d.stop(syscall.SIGTERM)

	segs, _ := filepath.Glob(filepath.Join(dir, "audit.log.*"))
	if len(segs) != 2 {
		t.Fatalf("segments kept: %v (want --audit-keep 2)", segs)
	}
	sbxBin, _ := requirements(t, "crun")
	out, err := exec.Command(sbxBin, "audit", "verify", "--data-dir", dir, "--anchor-dir", anchor).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rotated away") || !strings.Contains(string(out), "anchored by the signed checkpoint") {
		t.Fatalf("verify: %v %s", err, out)
	}
	t.Logf("%s", out)
	aside := filepath.Join(t.TempDir(), "segment")
	if err := os.Rename(segs[0], aside); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sbxBin, "audit", "verify", "--data-dir", dir, "--anchor-dir", anchor).CombinedOutput(); err == nil || !strings.Contains(string(out), "TRUNCATED") {
		t.Fatalf("verify with its oldest kept segment deleted: %v %s", err, out)
	}
	if err := os.Rename(aside, segs[0]); err != nil { // for the cleanup's reap, which opens the log
		t.Fatal(err)
	}
}

// syslogSaw reads syslog datagrams until one has every part (5 s).
func syslogSaw(pc net.PacketConn, parts ...string) bool {
	buf := make([]byte, 64<<10)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return false
		}
		msg, all := string(buf[:n]), true
		for _, p := range parts {
			all = all && strings.Contains(msg, p)
		}
		if all && strings.Contains(msg, "sbx-audit") {
			return true
		}
	}
}

// jsonField is one string field of a JSON object.
func jsonField(t *testing.T, b []byte, k string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	s, _ := m[k].(string)
	return s
}
