package main

import (
	"archive/tar"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type entry struct {
	typ  byte
	data string
	link string
	mode int64
}

// flatten pulls ref with crane and applies its layers as a client would
// (mutate.Extract honours whiteouts and opaque directories).
func flatten(t *testing.T, ref string, opts ...crane.Option) (v1.Image, map[string]entry) {
	t.Helper()
	img, err := crane.Pull(ref, append(opts, crane.Insecure)...)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	m := map[string]entry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		b, _ := io.ReadAll(tr)
		m[strings.TrimSuffix(h.Name, "/")] = entry{h.Typeflag, string(b), h.Linkname, h.Mode}
	}
	return img, m
}

func fakeRootfs(t *testing.T) string {
	r := t.TempDir()
	files := map[string]string{
		"etc/passwd":         "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n",
		"etc/passwd-":        "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n",
		"etc/shadow":         "root:*:19000:0:99999:7:::\nuser:!:19000:0:99999:7:::\n",
		"etc/group":          "root:x:0:\nsudo:x:27:user\nusers:x:100:user,other\nuser:x:1000:\n",
		"etc/gshadow":        "root:*::\nsudo:*:user:user\nuser:!::\n",
		"etc/motd":           "welcome\n",
		"etc/sudoers.d/user": "user ALL=(ALL) NOPASSWD:ALL\n",
		"home/user/.bashrc":  "# hi\n",
		"usr/bin/tool":       strings.Repeat("x", 3<<20),
	}
	for name, data := range files {
		p := filepath.Join(r, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(r, "usr/bin/tool"), filepath.Join(r, "usr/bin/tool2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/bin", filepath.Join(r, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(r, "etc/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestImages(t *testing.T) {
	bb := "/bin/busybox"
	if _, err := os.Stat(bb); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v (apt-get install -y busybox-static)", bb, err)
		}
		t.Skipf("%s: %v (apt-get install -y busybox-static)", bb, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	store := &blobStore{dir: filepath.Join(t.TempDir(), "blobs")}
	srv := &http.Server{Handler: basicAuth(registry.New(registry.WithBlobHandler(store), registry.Logger(log.New(io.Discard, "", 0))), "/v2/private/", privUser, privPass)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	if err := populate(host, store, fakeRootfs(t), bb, 1); err != nil {
		t.Fatal(err)
	}

	tags, err := crane.ListTags(host+"/sbx-test/debian", crane.Insecure)
	if err != nil || len(tags) != 1 || tags[0] != "bookworm" {
		t.Fatalf("tags %v %v", tags, err)
	}

	// debian: the tree as is, anonymously (though /v2/ asks for basic auth)
	img, deb := flatten(t, host+"/sbx-test/debian:bookworm")
	if deb["home/user/.bashrc"].data != "# hi\n" || !strings.Contains(deb["etc/passwd"].data, "\nuser:") {
		t.Errorf("debian: user missing: %q", deb["etc/passwd"].data)
	}
	if e := deb["usr/bin/tool2"]; e.typ != tar.TypeLink || e.link != "usr/bin/tool" {
		t.Errorf("hard link: %+v", e.link)
	}
	if e := deb["bin"]; e.typ != tar.TypeSymlink || e.link != "usr/bin" {
		t.Errorf("symlink: %+v", e)
	}
	if deb["etc/fifo"].typ != tar.TypeFifo || len(deb["usr/bin/tool"].data) != 3<<20 {
		t.Errorf("fifo or big file wrong")
	}
	cf, _ := img.ConfigFile()
	if cf.Architecture != runtime.GOARCH || cf.Config.WorkingDir != "/" || !strings.HasPrefix(cf.Config.Env[0], "PATH=") {
		t.Errorf("debian config: %+v", cf.Config)
	}
	desc, err := crane.Head(host+"/sbx-test/debian:bookworm", crane.Insecure)
	if err != nil || desc.MediaType != types.DockerManifestList {
		t.Errorf("debian:bookworm is %v (%v), want a manifest list", desc, err)
	}

	// no user
	_, nu := flatten(t, host+"/sbx-test/debian-nouser:1")
	for _, p := range []string{"home/user", "home/user/.bashrc", "etc/sudoers.d/user"} {
		if _, ok := nu[p]; ok {
			t.Errorf("nouser has %s", p)
		}
	}
	want := map[string]string{
		"etc/passwd":  "root:x:0:0:root:/root:/bin/bash\n",
		"etc/passwd-": "root:x:0:0:root:/root:/bin/bash\n",
		"etc/shadow":  "root:*:19000:0:99999:7:::\n",
		"etc/group":   "root:x:0:\nsudo:x:27:\nusers:x:100:other\n",
		"etc/gshadow": "root:*::\nsudo:*::\n",
	}
	for p, w := range want {
		if nu[p].data != w {
			t.Errorf("nouser %s = %q, want %q", p, nu[p].data, w)
		}
	}
	if nu["etc/motd"].data != "welcome\n" || len(nu["usr/bin/tool2"].link+nu["usr/bin/tool2"].data) == 0 {
		t.Errorf("nouser lost the rest of the tree")
	}

	// busybox
	_, bx := flatten(t, host+"/sbx-test/busybox:1")
	if e := bx["bin/sh"]; e.typ != tar.TypeSymlink || e.link != "/bin/busybox" {
		t.Errorf("busybox bin/sh: %+v", e)
	}
	if bx["etc/passwd"].data != "root:x:0:0:root:/root:/bin/sh\n" || bx["etc/group"].data != "root:x:0:\n" {
		t.Errorf("busybox etc: %q %q", bx["etc/passwd"].data, bx["etc/group"].data)
	}
	if _, ok := bx["bin/bash"]; ok {
		t.Errorf("busybox has bash")
	}

	// multi: order and whiteouts
	mimg, mu := flatten(t, host+"/sbx-test/multi:1")
	if ls, _ := mimg.Layers(); len(ls) != 3 {
		t.Errorf("multi has %d layers", len(ls))
	}
	if mu["opt/marker"].data != "top\n" {
		t.Errorf("opt/marker = %q", mu["opt/marker"].data)
	}
	for _, p := range []string{"opt/gone", "etc/motd", "opt/dir/a", "opt/dir/b"} {
		if _, ok := mu[p]; ok {
			t.Errorf("multi still has %s", p)
		}
	}
	if mu["opt/dir/c"].data != "c\n" || mu["home/user/.bashrc"].data != "# hi\n" {
		t.Errorf("multi: opt/dir/c or the base tree missing")
	}

	// arm64 only
	amd := &v1.Platform{OS: "linux", Architecture: "amd64"}
	if _, err := crane.Pull(host+"/sbx-test/arm64only:1", crane.Insecure, crane.WithPlatform(amd)); err == nil {
		t.Errorf("arm64only pulled for amd64")
	} else {
		t.Logf("arm64only for amd64: %v", err)
	}
	flatten(t, host+"/sbx-test/arm64only:1", crane.WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"}))

	// private
	if _, err := crane.Pull(host+"/private/debian:1", crane.Insecure); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("private without credentials: %v", err)
	} else {
		t.Logf("private without credentials: %v", err)
	}
	if _, err := crane.Pull(host+"/private/debian:1", crane.Insecure, crane.WithAuth(&authn.Basic{Username: "u", Password: "nope"})); err == nil {
		t.Errorf("private with a wrong password pulled")
	}
	_, pr := flatten(t, host+"/private/debian:1", crane.WithAuth(&authn.Basic{Username: privUser, Password: privPass}))
	if pr["home/user/.bashrc"].data != "# hi\n" {
		t.Errorf("private: tree wrong")
	}

	// unknown tag
	if _, err := crane.Pull(host+"/sbx-test/debian:nope", crane.Insecure); err == nil || !strings.Contains(err.Error(), "MANIFEST_UNKNOWN") {
		t.Errorf("unknown tag: %v", err)
	}
}

func TestEditDB(t *testing.T) {
	got := string(editDB([]byte("a:x:1:user\nuser:x:2:\nb:x:3:c,user,d\nusers:x:4:\n"), []int{3}))
	if got != "a:x:1:\nb:x:3:c,d\nusers:x:4:\n" {
		t.Errorf("%q", got)
	}
}
