package files

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// form builds a multipart body with one "file" part per name/content pair.
func form(t *testing.T, pairs ...string) (string, *bytes.Buffer) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i+1 < len(pairs); i += 2 {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+pairs[i]+`"`)
		h.Set("Content-Type", "application/octet-stream")
		w, err := mw.CreatePart(h)
		must(t, err)
		_, _ = w.Write([]byte(pairs[i+1]))
	}
	must(t, mw.Close())
	return mw.FormDataContentType(), &b
}

func gz(s string) *bytes.Buffer {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return &b
}

func TestUploadMultipart(t *testing.T) {
	e := newEnv(t)
	pub := filepath.Join(e.dir, "pub") // outside the home, writable by all as /tmp is
	must(t, os.Mkdir(pub, 0o777))
	must(t, os.Chmod(pub, 0o1777))
	outside := filepath.Join(pub, "deep", "f.txt")
	ct, body := form(t, "a.txt", "one", "dir/sub/b.txt", "two", outside, "three")
	status, _, resp := do(t, "POST", e.url+"/files", map[string]string{"Content-Type": ct, "X-Metadata-Purpose": "Test"}, body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, resp)
	}
	var got []written
	must(t, json.Unmarshal(resp, &got))
	want := []string{filepath.Join(e.home, "a.txt"), filepath.Join(e.home, "dir/sub/b.txt"), outside}
	if len(got) != 3 {
		t.Fatalf("answer %s", resp)
	}
	for i, w := range got {
		if w.Path != want[i] || w.Name != filepath.Base(want[i]) || w.Type != "file" || w.Metadata["purpose"] != "Test" {
			t.Fatalf("item %d = %+v", i, w)
		}
		if uid, mode := ownerOf(t, w.Path); uid != 1000 || mode != 0o644 {
			t.Fatalf("%s: uid %d mode %v", w.Path, uid, mode)
		}
	}
	for _, d := range []string{filepath.Join(e.home, "dir"), filepath.Join(pub, "deep")} {
		if uid, mode := ownerOf(t, d); uid != 1000 || mode != os.ModeDir|0o755 {
			t.Fatalf("%s: uid %d mode %v", d, uid, mode)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "three" {
		t.Fatalf("content %q", b)
	}
	if names, _ := os.ReadDir(e.home); len(names) != 2 { // a.txt, dir
		t.Fatalf("home holds %v, want only what was uploaded", names)
	}
}

func TestUploadForms(t *testing.T) {
	e := newEnv(t)
	must(t, os.Mkdir(filepath.Join(e.home, "adir"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.home, "keep"), []byte("old"), 0o644))
	e.ownHome(t)
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	ct1, single := form(t, "ignored-name", "via query")
	ctDup, dup := form(t, "keep", "new1", "keep", "new2")
	ctBad, bad := form(t, "fine.txt", "x", "adir", "y")
	tests := []struct {
		name, query string
		hdr         map[string]string
		body        *bytes.Buffer
		status      int
		file, want  string
	}{
		{"octet", "path=raw.bin", octet, bytes.NewBufferString("raw"), 200, "raw.bin", "raw"},
		{"octet gzip", "path=gz.txt", map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}, gz("unzipped"), 200, "gz.txt", "unzipped"},
		{"octet overwrite", "path=keep", octet, bytes.NewBufferString("new"), 200, "keep", "new"},
		{"octet empty", "path=empty", octet, &bytes.Buffer{}, 200, "empty", ""},
		{"multipart path query", "path=q.txt", map[string]string{"Content-Type": ct1}, single, 200, "q.txt", "via query"},
		{"octet no path", "", octet, bytes.NewBufferString("x"), 400, "", ""},
		{"octet to directory", "path=adir", octet, bytes.NewBufferString("x"), 400, "", ""},
		{"bad gzip", "path=bad.gz", map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}, bytes.NewBufferString("not gzip"), 400, "", ""},
		{"unknown encoding", "path=x", map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "br"}, bytes.NewBufferString("x"), 400, "", ""},
		{"bad content type", "path=x", map[string]string{"Content-Type": "text/plain"}, bytes.NewBufferString("x"), 400, "", ""},
		// As envd: parts are written as they come; the first of two parts
		// naming one path lands, a bad part keeps the ones before it.
		{"duplicate targets", "", map[string]string{"Content-Type": ctDup}, dup, 400, "keep", "new1"},
		{"a bad part keeps the parts before it", "", map[string]string{"Content-Type": ctBad}, bad, 400, "fine.txt", "x"},
		{"nul path", "path=a%00b", octet, bytes.NewBufferString("x"), 400, "", ""},
		{"unknown user", "path=x&username=nobody", octet, bytes.NewBufferString("x"), 401, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, resp := do(t, "POST", e.url+"/files?"+tt.query, tt.hdr, tt.body)
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, resp, tt.status)
			}
			if tt.file == "" {
				return
			}
			b, err := os.ReadFile(filepath.Join(e.home, tt.file))
			if tt.want == "<missing>" {
				if !os.IsNotExist(err) {
					t.Fatalf("%s exists after a failed upload", tt.file)
				}
				return
			}
			if string(b) != tt.want {
				t.Fatalf("%s = %q, %v", tt.file, b, err)
			}
		})
	}
}

func TestUploadMetadata(t *testing.T) {
	e := newEnv(t)
	octet := func(md map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/octet-stream"}
		for k, v := range md {
			h["X-Metadata-"+k] = v
		}
		return h
	}
	tests := []struct {
		name   string
		md     map[string]string
		status int
		want   map[string]string
	}{
		{"lowercased", map[string]string{"Owner": "Me", "build-ID": "42"}, 200, map[string]string{"owner": "Me", "build-id": "42"}},
		{"replaced on overwrite", map[string]string{"other": "x"}, 200, map[string]string{"other": "x"}},
		{"cleared on overwrite", nil, 200, nil},
		{"key at limit", map[string]string{strings.Repeat("k", 246): "v"}, 200, map[string]string{strings.Repeat("k", 246): "v"}},
		{"key too long", map[string]string{strings.Repeat("k", 247): "v"}, 400, nil},
		{"total too big", map[string]string{"a": strings.Repeat("v", 2100), "b": strings.Repeat("v", 2100)}, 400, nil},
		{"not printable", map[string]string{"k": "caf\u00e9"}, 400, nil},
	}
	target := filepath.Join(e.home, "m.txt")
	last := map[string]string(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, resp := do(t, "POST", e.url+"/files?path=m.txt", octet(tt.md), reader("data"))
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, resp, tt.status)
			}
			want := tt.want
			if status != 200 {
				want = last // a refused upload keeps the old metadata
			}
			got := readMeta(t, target)
			if len(got) != len(want) {
				t.Fatalf("metadata %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("metadata %v, want %v", got, want)
				}
			}
			last = want
		})
	}
}

func readMeta(t *testing.T, p string) map[string]string {
	t.Helper()
	buf := make([]byte, 65536)
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		return nil
	}
	md := map[string]string{}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if key, ok := strings.CutPrefix(name, "user.e2b."); ok {
			v := make([]byte, 8192)
			m, err := unix.Getxattr(p, name, v)
			must(t, err)
			md[key] = string(v[:m])
		}
	}
	return md
}
