package builder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"sort"
	"strings"
	"testing"
)

func TestMapEntry(t *testing.T) {
	for _, tc := range []struct {
		name, src, dest string
		dir             bool
		target, top     string
		ok              bool
	}{
		{"a.txt", "a.txt", "/srv/b.txt", false, "/srv/b.txt", "/srv/b.txt", true},
		{"a.txt", "a.txt", "/srv/", false, "/srv/a.txt", "/srv/a.txt", true},
		{"sub/a.txt", "sub/a.txt", "/srv/", false, "/srv/a.txt", "/srv/a.txt", true},
		{"dir", "dir", "/app", true, "", "", false},
		{"dir/x/y", "dir", "/app", false, "/app/x/y", "/app/x", true},
		{"dirx/y", "dir", "/app", false, "", "", false},
		{"other", "dir", "/app", false, "", "", false},
		{"a.py", "*.py", "/app", false, "/app/a.py", "/app/a.py", true},
		{"x/y", ".", "/app", false, "/app/x/y", "/app/x", true},
	} {
		target, top, ok := mapEntry(tc.name, tc.src, tc.dest, tc.dir)
		if target != tc.target || top != tc.top || ok != tc.ok {
			t.Errorf("mapEntry(%q, %q, %q) = %q %q %v, want %q %q %v", tc.name, tc.src, tc.dest, target, top, ok, tc.target, tc.top, tc.ok)
		}
	}
}

func tarOf(t *testing.T, gz bool, entries map[string]string) []byte {
	var b bytes.Buffer
	var w io.Writer = &b
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&b)
		w = zw
	}
	tw := tar.NewWriter(w)
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(entries[n])), Typeflag: tar.TypeReg}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(entries[n]))
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return b.Bytes()
}

func TestRetarget(t *testing.T) {
	for _, gz := range []bool{true, false} {
		in := tarOf(t, gz, map[string]string{"ctx/": "", "ctx/a": "A", "ctx/sub/b": "B", "../evil": "E", "/abs": "X"})
		var out bytes.Buffer
		tops, err := retarget(context.Background(), bytes.NewReader(in), &out, "ctx", "/app", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(tops)
		if strings.Join(tops, ",") != "/app/a,/app/sub" {
			t.Errorf("tops %v", tops)
		}
		got := map[string]string{}
		tr := tar.NewReader(&out)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(tr)
			got[h.Name] = string(b)
		}
		if len(got) != 2 || got["app/a"] != "A" || got["app/sub/b"] != "B" {
			t.Errorf("gzip=%v: entries %v", gz, got)
		}
	}
	if _, err := retarget(context.Background(), bytes.NewReader(tarOf(t, false, map[string]string{"a": "x"})), io.Discard, "missing", "/app", 1<<20); err == nil {
		t.Error("a source with no files in the upload: no error")
	}
	if _, err := retarget(context.Background(), bytes.NewReader(tarOf(t, false, map[string]string{"a": "0123456789"})), io.Discard, "a", "/app", 5); err == nil {
		t.Error("an upload past the limit: no error")
	}
}

func TestHashKeyChains(t *testing.T) {
	a := hashKey("parent", "RUN", `["echo"]`, "")
	if a == hashKey("parent", "RUN", `["echo "]`, "") || a == hashKey("parent2", "RUN", `["echo"]`, "") {
		t.Error("different steps or parents share a key")
	}
	if hashKey("ab", "c") == hashKey("a", "bc") {
		t.Error("key parts are not delimited")
	}
}

func TestValidateSpec(t *testing.T) {
	h := strings.Repeat("a", 64)
	for _, tc := range []struct {
		spec Spec
		ok   bool
	}{
		{Spec{FromImage: "x"}, true},
		{Spec{FromTemplate: "base", Steps: []Step{{Type: "RUN", Args: []string{"true"}}, {Type: "COPY", Args: []string{"a", "/b"}, FilesHash: h}}}, true},
		{Spec{}, false},
		{Spec{FromImage: "x", FromTemplate: "y"}, false},
		{Spec{FromImage: "x", Steps: []Step{{Type: "HEALTHCHECK"}}}, false},
		{Spec{FromImage: "x", Steps: []Step{{Type: "COPY", Args: []string{"a", "/b"}, FilesHash: "../x"}}}, false},
	} {
		if err := validateSpec(tc.spec); (err == nil) != tc.ok {
			t.Errorf("validateSpec(%+v) = %v, want ok %v", tc.spec, err, tc.ok)
		}
	}
}
