// Command registry is the OCI registry of the template end-to-end tests
// (test/e2e/template.test.mjs): go-containerregistry's in-process registry on
// a loopback address, with a fixed set of images built from the `base`
// template's rootfs, so template builds `fromImage(...)` need no internet.
//
//	go run ./test/e2e/registry --addr 127.0.0.1:5055 --rootfs /var/lib/sbx/templates/base/rootfs
//
// It prints "addr HOST:PORT" (with --addr 127.0.0.1:0 the port is a free
// one), pushes the images below, prints "ready" and serves until it is
// killed (SIGINT/SIGTERM, or end of stdin with --exit-on-eof):
//
//	sbx-test/debian:bookworm   a manifest list (host platform only) of one
//	                           layer: the rootfs as is (bash, python3, node,
//	                           sudo, user `user`), Env PATH, WorkingDir /
//	sbx-test/debian-nouser:1   the same tree without `user` (passwd, group,
//	                           shadow, gshadow, /home/user, sudoers.d/user)
//	sbx-test/busybox:1         static busybox and its applet links, root only
//	                           in etc/passwd and etc/group: no bash, no python
//	                           (left out, with a warning, without a static
//	                           /bin/busybox: apt-get install busybox-static)
//	sbx-test/multi:1           debian's layer plus two more: /opt/marker is
//	                           "top" (the middle layer wrote "mid"), /opt/gone
//	                           and /etc/motd are whited out, /opt/dir is
//	                           opaque in the top layer (only c, not a and b)
//	sbx-test/arm64only:1       an index with only a linux/arm64 image
//	private/debian:1           debian's image; every /v2/private/ path needs
//	                           basic auth u / p
//
// Blobs live on disk in a temporary directory (removed on exit, and at the
// next start if a run was killed). The rootfs is read once and streamed into
// both big layers at the same time; the layers are written straight into the
// blob store, so pushing them is a HEAD each.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
)

const (
	privUser = "u"
	privPass = "p"
	tmpGlob  = "sbx-test-registry-*"
	debPath  = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5055", "listen address (loopback: clients pull over plain HTTP)")
	rootfs := flag.String("rootfs", "/var/lib/sbx/templates/base/rootfs", "rootfs of the debian images")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox (Debian's busybox-static)")
	level := flag.Int("gzip-level", gzip.BestSpeed, "gzip level of the layers")
	dir := flag.String("dir", "", "blob directory (default: a temporary one, removed on exit)")
	eof := flag.Bool("exit-on-eof", false, "exit when stdin reaches end of file (the parent is gone)")
	verbose := flag.Bool("v", false, "log every request on stderr")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("registry: ")

	// bind first: a busy port fails before minutes of tarring
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	host := ln.Addr().String()
	fmt.Println("addr", host) // --addr 127.0.0.1:0 picks a free port

	removeDir := false
	if *dir == "" {
		cleanStale()
		d, err := os.MkdirTemp("", tmpGlob)
		if err != nil {
			log.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(d, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		*dir, removeDir = d, true
	}
	store := &blobStore{dir: filepath.Join(*dir, "blobs")}
	cleanup := func() {
		if removeDir {
			os.RemoveAll(*dir)
		}
	}

	var h http.Handler = registry.New(registry.WithBlobHandler(store), registry.Logger(log.New(io.Discard, "", 0)))
	h = basicAuth(h, "/v2/private/", privUser, privPass)
	if *verbose {
		h = logRequests(h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGINT, syscall.SIGTERM)
	if *eof {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			done <- syscall.SIGTERM
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- populate(host, store, *rootfs, *busybox, *level) }()
	select {
	case err := <-errc:
		if err != nil {
			cleanup()
			log.Fatal(err)
		}
	case <-done:
		log.Print("stopped before the images were pushed")
		cleanup()
		os.Exit(1)
	}
	fmt.Println("ready")
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	srv.Shutdown(ctx)
	cancel()
	cleanup()
}

// populate builds the layers and pushes every image to the registry at host.
func populate(host string, store *blobStore, rootfs, busybox string, level int) error {
	start := time.Now()
	if real, err := filepath.EvalSymlinks(rootfs); err == nil {
		rootfs = real // templates/base/rootfs links to the template's Debian layer
	}
	if fi, err := os.Stat(rootfs); err != nil || !fi.IsDir() {
		return fmt.Errorf("rootfs %s: not a directory (%v): install the base template first (scripts/install.sh)", rootfs, err)
	}
	if err := os.MkdirAll(store.dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(rootfs, "etc/motd")); err != nil {
		log.Printf("warning: %s/etc/motd is missing: multi:1's whiteout of it deletes nothing", rootfs)
	}

	var full, nouser, bb *fileLayer
	var bbErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); bb, bbErr = busyboxLayer(store, busybox, level) }()
	full, nouser, err := rootfsLayers(store, rootfs, level)
	wg.Wait()
	if err != nil {
		return err
	}
	if bbErr != nil { // only busybox:1 is missing then (its test says why)
		log.Printf("warning: no sbx-test/busybox:1: %v", bbErr)
	}
	mid, err := tarLayer(store, level, midLayer)
	if err != nil {
		return err
	}
	top, err := tarLayer(store, level, topLayer)
	if err != nil {
		return err
	}
	arm, err := tarLayer(store, level, func(tw *tar.Writer) error {
		return writeFile(tw, "hello", 0o644, []byte("arm64 only\n"))
	})
	if err != nil {
		return err
	}
	log.Printf("layers built in %s: rootfs %d MiB (gzip %d MiB), no-user %d MiB", time.Since(start).Round(time.Millisecond),
		full.uncompressed>>20, full.size>>20, nouser.size>>20)

	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	debCfg := v1.Config{Env: []string{debPath}, WorkingDir: "/", Cmd: []string{"bash"}}
	debian, err := image(false, plat, debCfg, layerAdd(full, "rootfs of the base template"))
	if err != nil {
		return err
	}
	noUser, err := image(false, plat, debCfg, layerAdd(nouser, "rootfs of the base template without user"))
	if err != nil {
		return err
	}
	var bbImg v1.Image
	if bb != nil {
		bbImg, err = image(true, plat, v1.Config{Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, Cmd: []string{"sh"}},
			layerAdd(bb, "static busybox"))
		if err != nil {
			return err
		}
	}
	multi, err := image(true, plat, debCfg, layerAdd(full, "rootfs of the base template"),
		layerAdd(mid, "opt/marker=mid, opt/gone, opt/dir/{a,b}"),
		layerAdd(top, "opt/marker=top, whiteouts opt/gone etc/motd, opaque opt/dir with c"))
	if err != nil {
		return err
	}
	armPlat := v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	armImg, err := image(true, armPlat, v1.Config{Cmd: []string{"/hello"}}, layerAdd(arm, "arm64 only"))
	if err != nil {
		return err
	}

	debIdx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.DockerManifestList),
		mutate.IndexAddendum{Add: debian, Descriptor: v1.Descriptor{Platform: &plat}})
	armIdx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: armImg, Descriptor: v1.Descriptor{Platform: &armPlat}})

	for _, p := range []struct {
		ref string
		img any
	}{
		{"sbx-test/debian:bookworm", debIdx},
		{"sbx-test/debian-nouser:1", noUser},
		{"sbx-test/busybox:1", bbImg}, // nil without busybox
		{"sbx-test/multi:1", multi},
		{"sbx-test/arm64only:1", armIdx},
		{"private/debian:1", debian},
	} {
		ref, err := name.ParseReference(host+"/"+p.ref, name.Insecure)
		if err != nil {
			return err
		}
		opts := []remote.Option{remote.WithAuth(&authn.Basic{Username: privUser, Password: privPass})}
		if p.img == nil {
			continue
		}
		switch img := p.img.(type) {
		case v1.Image:
			err = remote.Write(ref, img, opts...)
		case v1.ImageIndex:
			err = remote.WriteIndex(ref, img, opts...)
		}
		if err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		log.Printf("pushed %s", ref)
	}
	log.Printf("all images pushed in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

func layerAdd(l *fileLayer, what string) mutate.Addendum {
	return mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "sbx e2e registry: " + what, Created: v1.Time{Time: time.Now().UTC()}}}
}

// image stacks layers on an empty image, with OCI or Docker media types.
func image(oci bool, plat v1.Platform, cfg v1.Config, adds ...mutate.Addendum) (v1.Image, error) {
	base := empty.Image
	layerType := types.DockerLayer
	if oci {
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
		layerType = types.OCILayer
	}
	for i := range adds {
		adds[i].MediaType = layerType
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Config = cfg
	cf.Created = v1.Time{Time: time.Now().UTC()}
	return mutate.ConfigFile(img, cf)
}

// ---- blob store -------------------------------------------------------------

// blobStore keeps blobs in dir/<algorithm>/<hex>. Unlike the registry's disk
// handler it trusts its files (no hashing on every HEAD and GET).
type blobStore struct{ dir string }

func (s *blobStore) path(h v1.Hash) string { return filepath.Join(s.dir, h.Algorithm, h.Hex) }

func (s *blobStore) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	fi, err := os.Stat(s.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, registry.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (s *blobStore) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	f, err := os.Open(s.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, registry.ErrNotFound
	}
	return f, err
}

func (s *blobStore) Put(_ context.Context, _ string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	f, err := os.CreateTemp(s.dir, "upload-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc) // the registry checks the digest as it is read
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.adopt(f.Name(), h)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func (s *blobStore) Delete(_ context.Context, _ string, h v1.Hash) error {
	err := os.Remove(s.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return registry.ErrNotFound
	}
	return err
}

func (s *blobStore) adopt(file string, h v1.Hash) error {
	if err := os.MkdirAll(filepath.Join(s.dir, h.Algorithm), 0o755); err != nil {
		return err
	}
	return os.Rename(file, s.path(h))
}

// cleanStale removes the blob directories of runs that were killed.
func cleanStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpGlob))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// ---- HTTP wrappers ----------------------------------------------------------

// basicAuth requires user/pass for every path under prefix. The API root
// /v2/ answers 401 with a Basic challenge to a request without valid
// credentials (as Docker Hub does): clients probe it to learn how to
// authenticate, and one that got 200 there would never send credentials.
// Anonymous requests for the other repositories are served.
func basicAuth(next http.Handler, prefix, user, pass string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/v2" || p == "/v2/" || strings.HasPrefix(p, prefix) {
			u, pw, ok := r.BasicAuth()
			if !ok || u != user || pw != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="sbx-test-registry"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`+"\n")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
	n    int64
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: 200}
		next.ServeHTTP(sw, r)
		log.Printf("%s %s %d %dB %s", r.Method, r.URL.RequestURI(), sw.code, sw.n, time.Since(t).Round(time.Millisecond))
	})
}

// ---- layers -------------------------------------------------------------------

// fileLayer is a gzipped tar in the blob store, hashed while it was written.
type fileLayer struct {
	path               string
	digest, diffID     v1.Hash
	size, uncompressed int64
}

func (l *fileLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)             { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return types.DockerLayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return gunzipFile(l.path) }

func gunzipFile(p string) (io.ReadCloser, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// layerWriter writes a tar into a gzip file in the store, hashing the
// compressed bytes (the digest) and the tar (the diff id). With async the
// hashing and compression run on their own goroutine, so two layers written
// entry by entry from one walk compress in parallel.
type layerWriter struct {
	store      *blobStore
	f          *os.File
	bw         *bufio.Writer
	digest     hash.Hash
	diff       hash.Hash
	comp, tarw *countWriter
	gz         *gzip.Writer
	async      *asyncWriter
	tw         *tar.Writer
}

func newLayerWriter(store *blobStore, level int, async bool) (*layerWriter, error) {
	f, err := os.CreateTemp(store.dir, "layer-*")
	if err != nil {
		return nil, err
	}
	lw := &layerWriter{store: store, f: f, bw: bufio.NewWriterSize(f, 1<<20), digest: sha256.New(), diff: sha256.New()}
	lw.comp = &countWriter{w: io.MultiWriter(lw.bw, lw.digest)}
	if lw.gz, err = gzip.NewWriterLevel(lw.comp, level); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	lw.tarw = &countWriter{w: io.MultiWriter(lw.gz, lw.diff)}
	var w io.Writer = lw.tarw
	if async {
		lw.async = newAsyncWriter(lw.tarw)
		w = lw.async
	}
	lw.tw = tar.NewWriter(w)
	return lw, nil
}

func (lw *layerWriter) abort() {
	if lw.async != nil {
		lw.async.Close()
	}
	lw.f.Close()
	os.Remove(lw.f.Name())
}

func (lw *layerWriter) finish() (*fileLayer, error) {
	err := lw.tw.Close()
	if lw.async != nil {
		if cerr := lw.async.Close(); err == nil {
			err = cerr
		}
	}
	for _, step := range []func() error{lw.gz.Close, lw.bw.Flush, lw.f.Close} {
		if err != nil {
			break
		}
		err = step()
	}
	if err != nil {
		lw.abort()
		return nil, err
	}
	l := &fileLayer{
		digest:       v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(lw.digest.Sum(nil))},
		diffID:       v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(lw.diff.Sum(nil))},
		size:         lw.comp.n,
		uncompressed: lw.tarw.n,
	}
	if err := lw.store.adopt(lw.f.Name(), l.digest); err != nil {
		os.Remove(lw.f.Name())
		return nil, err
	}
	l.path = lw.store.path(l.digest)
	return l, nil
}

// asyncWriter hands chunks of its writes to a goroutine that writes them on.
type asyncWriter struct {
	buf  []byte
	ch   chan []byte
	done chan struct{}
	err  error
}

const chunk = 256 << 10

func newAsyncWriter(w io.Writer) *asyncWriter {
	ch := make(chan []byte, 64)
	a := &asyncWriter{buf: make([]byte, 0, chunk), ch: ch, done: make(chan struct{})}
	go func() { // ranges over ch, not a.ch, which Close sets to nil
		defer close(a.done)
		for b := range ch {
			if a.err == nil {
				_, a.err = w.Write(b)
			}
		}
	}()
	return a
}

func (a *asyncWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		k := copy(a.buf[len(a.buf):cap(a.buf)], b)
		a.buf, b = a.buf[:len(a.buf)+k], b[k:]
		if len(a.buf) == cap(a.buf) {
			a.ch <- a.buf
			a.buf = make([]byte, 0, chunk)
		}
	}
	return n, nil
}

// Close flushes, waits for the goroutine and returns its first error.
func (a *asyncWriter) Close() error {
	if a.ch == nil {
		return a.err
	}
	if len(a.buf) > 0 {
		a.ch <- a.buf
	}
	close(a.ch)
	a.ch = nil
	<-a.done
	return a.err
}

func tarLayer(store *blobStore, level int, fill func(*tar.Writer) error) (*fileLayer, error) {
	lw, err := newLayerWriter(store, level, false)
	if err != nil {
		return nil, err
	}
	if err := fill(lw.tw); err != nil {
		lw.abort()
		return nil, err
	}
	return lw.finish()
}

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func writeDir(tw *tar.Writer, name string, mode int64) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimSuffix(name, "/") + "/", Mode: mode, ModTime: epoch})
}

func writeFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func midLayer(tw *tar.Writer) error {
	for _, e := range []struct {
		name, data string
	}{{"opt/", ""}, {"opt/marker", "mid\n"}, {"opt/gone", "gone\n"}, {"opt/dir/", ""}, {"opt/dir/a", "a\n"}, {"opt/dir/b", "b\n"}} {
		var err error
		if strings.HasSuffix(e.name, "/") {
			err = writeDir(tw, e.name, 0o755)
		} else {
			err = writeFile(tw, e.name, 0o644, []byte(e.data))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// topLayer: the opaque marker comes first in its directory, as docker writes it.
func topLayer(tw *tar.Writer) error {
	for _, e := range []struct {
		name, data string
	}{{"etc/", ""}, {"etc/.wh.motd", ""}, {"opt/", ""}, {"opt/.wh.gone", ""}, {"opt/dir/", ""},
		{"opt/dir/.wh..wh..opq", ""}, {"opt/dir/c", "c\n"}, {"opt/marker", "top\n"}} {
		var err error
		if strings.HasSuffix(e.name, "/") {
			err = writeDir(tw, e.name, 0o755)
		} else {
			err = writeFile(tw, e.name, 0o644, []byte(e.data))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// busyboxLayer: /bin/busybox, a link per applet at its usual place, and the
// few files of etc the official busybox image has (root only).
func busyboxLayer(store *blobStore, bin string, level int) (*fileLayer, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("busybox: %w (apt-get install -y busybox-static)", err)
	}
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("busybox %s: %w", bin, err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("busybox %s is dynamically linked: install busybox-static", bin)
		}
	}
	var applets []string
	if out, err := exec.Command(bin, "--list-full").Output(); err == nil {
		applets = strings.Fields(string(out))
	}
	if len(applets) < 10 {
		applets = nil
		for _, a := range strings.Fields("sh ash cat cp echo false id ln ls mkdir mv ps pwd rm sed sleep true uname whoami") {
			applets = append(applets, "bin/"+a)
		}
	}
	return tarLayer(store, level, func(tw *tar.Writer) error {
		for _, d := range []struct {
			name string
			mode int64
		}{{"bin", 0o755}, {"dev", 0o755}, {"etc", 0o755}, {"home", 0o755}, {"proc", 0o555}, {"root", 0o700},
			{"sbin", 0o755}, {"sys", 0o555}, {"tmp", 0o1777}, {"usr", 0o755}, {"usr/bin", 0o755},
			{"usr/sbin", 0o755}, {"var", 0o755}, {"var/tmp", 0o1777}} {
			if err := writeDir(tw, d.name, d.mode); err != nil {
				return err
			}
		}
		if err := writeFile(tw, "bin/busybox", 0o755, data); err != nil {
			return err
		}
		for _, f := range []struct{ name, data string }{
			{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"},
			{"etc/group", "root:x:0:\n"},
			{"etc/shadow", "root:*::0:::::\n"},
		} {
			mode := int64(0o644)
			if f.name == "etc/shadow" {
				mode = 0o600
			}
			if err := writeFile(tw, f.name, mode, []byte(f.data)); err != nil {
				return err
			}
		}
		dirs := map[string]bool{"bin": true, "sbin": true, "usr/bin": true, "usr/sbin": true, ".": true}
		seen := map[string]bool{"bin/busybox": true}
		for _, a := range applets {
			a = strings.TrimPrefix(path.Clean("/"+a), "/")
			if seen[a] || !dirs[path.Dir(a)] {
				continue
			}
			seen[a] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- the rootfs, once, into two layers ------------------------------------------

const user = "user"

// noUserEdit says what the no-user tree does with an entry: drop it, or
// replace a file's content (edit != nil).
func noUserEdit(rel string) (drop bool, edit func([]byte) []byte) {
	switch {
	case rel == "home/"+user || strings.HasPrefix(rel, "home/"+user+"/"), rel == "etc/sudoers.d/"+user, rel == "var/mail/"+user:
		return true, nil
	}
	switch strings.TrimSuffix(rel, "-") { // etc/passwd- & co are the previous versions
	case "etc/passwd", "etc/shadow", "etc/subuid", "etc/subgid":
		return false, func(b []byte) []byte { return editDB(b, nil) }
	case "etc/group":
		return false, func(b []byte) []byte { return editDB(b, []int{3}) }
	case "etc/gshadow":
		return false, func(b []byte) []byte { return editDB(b, []int{2, 3}) }
	}
	return false, nil
}

// editDB drops the line of `user` from a colon-separated database and
// removes it from the member lists in the given fields.
func editDB(b []byte, lists []int) []byte {
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimSuffix(line, "\n")
		f := strings.Split(body, ":")
		if f[0] == user {
			continue
		}
		for _, i := range lists {
			if i < len(f) && f[i] != "" {
				var keep []string
				for _, m := range strings.Split(f[i], ",") {
					if m != user {
						keep = append(keep, m)
					}
				}
				f[i] = strings.Join(keep, ",")
			}
		}
		out.WriteString(strings.Join(f, ":"))
		if strings.HasSuffix(line, "\n") {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

type inode struct{ dev, ino uint64 }

// rootfsLayers walks the rootfs once and writes the full tree and the tree
// without `user` side by side; each compresses on its own goroutine.
func rootfsLayers(store *blobStore, rootfs string, level int) (full, nouser *fileLayer, err error) {
	a, err := newLayerWriter(store, level, true)
	if err != nil {
		return nil, nil, err
	}
	b, err := newLayerWriter(store, level, true)
	if err != nil {
		a.abort()
		return nil, nil, err
	}
	droppedUser := false
	linksA, linksB := map[inode]string{}, map[inode]string{}
	buf := make([]byte, 1<<20)
	walkErr := filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootfs, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name = rel
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", "" // the host's names for the ids mean nothing here
		dropB, edit := noUserEdit(rel)
		if dropB && fi.IsDir() && rel == "home/"+user {
			droppedUser = true
		}

		if !fi.Mode().IsRegular() {
			if err := a.tw.WriteHeader(hdr); err != nil {
				return err
			}
			if !dropB {
				return b.tw.WriteHeader(hdr)
			}
			return nil
		}

		// regular file: a hard link to an earlier entry, or its content
		hA, hB := *hdr, *hdr
		var key inode
		linked := false
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			key, linked = inode{uint64(st.Dev), st.Ino}, true
		}
		needA, needB := true, !dropB
		if linked {
			if first, ok := linksA[key]; ok {
				hA.Typeflag, hA.Linkname, hA.Size, needA = tar.TypeLink, first, 0, false
				if err := a.tw.WriteHeader(&hA); err != nil {
					return err
				}
			} else {
				linksA[key] = rel
			}
			if !dropB && edit == nil {
				if first, ok := linksB[key]; ok {
					hB.Typeflag, hB.Linkname, hB.Size, needB = tar.TypeLink, first, 0, false
					if err := b.tw.WriteHeader(&hB); err != nil {
						return err
					}
				} else {
					linksB[key] = rel
				}
			}
		}
		if !needA && !needB {
			return nil
		}
		if edit != nil {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if needA {
				if err := a.tw.WriteHeader(&hA); err != nil {
					return err
				}
				if _, err := a.tw.Write(data); err != nil {
					return err
				}
			}
			if needB {
				data = edit(data)
				hB.Size = int64(len(data))
				if err := b.tw.WriteHeader(&hB); err != nil {
					return err
				}
				if _, err := b.tw.Write(data); err != nil {
					return err
				}
			}
			return nil
		}
		var ws []io.Writer
		if needA {
			if err := a.tw.WriteHeader(&hA); err != nil {
				return err
			}
			ws = append(ws, a.tw)
		}
		if needB {
			if err := b.tw.WriteHeader(&hB); err != nil {
				return err
			}
			ws = append(ws, b.tw)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(io.MultiWriter(ws...), f, buf)
		if err == nil && n != hdr.Size {
			err = fmt.Errorf("%s changed size while being read", p)
		}
		return err
	})
	if walkErr != nil {
		a.abort()
		b.abort()
		return nil, nil, walkErr
	}
	if !droppedUser {
		log.Printf("warning: %s has no home/%s: debian-nouser:1 differs from debian:bookworm in passwd & co only", rootfs, user)
	}
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); full, errA = a.finish() }()
	nouser, errB = b.finish()
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		return nil, nil, err
	}
	return full, nouser, nil
}
