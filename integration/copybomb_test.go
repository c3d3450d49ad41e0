package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"
)

// TestBuildCopyGzipBomb: a COPY whose gzip-compressed upload inflates past
// twice the upload bound (here 1.2 GiB of zeros in an entry the COPY does
// not take, a ~1.2 MiB upload) fails the build fast, with an E2B-style
// reason naming the bound; before, the daemon inflated all of it outside
// any cgroup (a 512 MiB upload: ~500 GiB, minutes of a core) and the
// build succeeded.
func TestBuildCopyGzipBomb(t *testing.T) {
	d := startDaemon(t, "runsc", "")
	hash := strings.Repeat("cd", 32)
	spec := map[string]any{"fromTemplate": "base", "steps": []map[string]any{
		{"type": "COPY", "args": []string{"app.conf", "/etc/app.conf"}, "filesHash": hash}}}
	var req struct{ TemplateID, BuildID string }
	if c := d.api("POST", "/v3/templates", map[string]any{"name": "bomb"}, &req); c != 202 {
		t.Fatalf("request build: %d", c)
	}
	d.uploadAs(t, apiKey, req.TemplateID, hash, gzipBomb(t, 1200<<20))
	t0 := time.Now()
	if c := d.api("POST", "/v2/templates/"+req.TemplateID+"/builds/"+req.BuildID, spec, nil); c != 202 {
		t.Fatalf("start build: %d", c)
	}
	st := d.waitBuildAs(t, apiKey, req.TemplateID, req.BuildID)
	took := time.Since(t0)
	if st.Status != "error" || st.Reason == nil || !strings.Contains(st.Reason.Message, "inflate to more than 1073741824 bytes") {
		t.Fatalf("build of a COPY gzip bomb: %+v, want an error naming the 1 GiB bound", st)
	}
	if took > time.Minute {
		t.Errorf("the bomb's build took %v to fail", took)
	}
	t.Logf("failed in %v: %s", took.Round(time.Millisecond), st.Reason.Message)
}

// gzipBomb is a gzip-compressed tar of an entry "junk" of n zero bytes (n
// a multiple of 1 MiB), then "app.conf": gzip members, one compressed MiB
// of zeros repeated (a reader takes concatenated members as one stream).
func gzipBomb(t *testing.T, n int64) []byte {
	t.Helper()
	var head, tail bytes.Buffer
	tw := tar.NewWriter(&head)
	if err := tw.WriteHeader(&tar.Header{Name: "junk", Mode: 0o644, Size: n, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw = tar.NewWriter(&tail)
	_ = tw.WriteHeader(&tar.Header{Name: "app.conf", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("ok\n"))
	_ = tw.Close()
	member := func(p []byte) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(p)
		_ = zw.Close()
		return b.Bytes()
	}
	out := member(head.Bytes())
	zeros := member(make([]byte, 1<<20))
	for range n >> 20 {
		out = append(out, zeros...)
	}
	return append(out, member(tail.Bytes())...)
}
