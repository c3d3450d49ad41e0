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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
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
	rootfs, err := checkRootfs(store, rootfs)
	if err != nil {
		return err
	}
	ls, err := buildLayers(store, rootfs, busybox, level)
	if err != nil {
		return err
	}
	log.Printf("layers built in %s: rootfs %d MiB (gzip %d MiB), no-user %d MiB", time.Since(start).Round(time.Millisecond),
		ls.full.uncompressed>>20, ls.full.size>>20, ls.nouser.size>>20)
	imgs, err := buildImages(ls)
	if err != nil {
		return err
	}
	for _, p := range imgs {
		if err := push(host, p.ref, p.img); err != nil {
			return err
		}
	}
	log.Printf("all images pushed in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

// checkRootfs resolves the template's rootfs and makes the blob store.
func checkRootfs(store *blobStore, rootfs string) (string, error) {
	if real, err := filepath.EvalSymlinks(rootfs); err == nil {
		rootfs = real // templates/base/rootfs links to the template's Debian layer
	}
	if fi, err := os.Stat(rootfs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("rootfs %s: not a directory (%v): install the base template first (scripts/install.sh)", rootfs, err)
	}
	if err := os.MkdirAll(store.dir, 0o755); err != nil {
		return "", err
	}
	if _, err := os.Lstat(filepath.Join(rootfs, "etc/motd")); err != nil {
		log.Printf("warning: %s/etc/motd is missing: multi:1's whiteout of it deletes nothing", rootfs)
	}
	return rootfs, nil
}

// testLayers are the layers of the test images (busybox nil without a
// static busybox).
type testLayers struct{ full, nouser, busybox, mid, top, arm *fileLayer }

func buildLayers(store *blobStore, rootfs, busybox string, level int) (*testLayers, error) {
	ls := &testLayers{}
	var bbErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ls.busybox, bbErr = busyboxLayer(store, busybox, level) }()
	var err error
	ls.full, ls.nouser, err = rootfsLayers(store, rootfs, level)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if bbErr != nil { // only busybox:1 is missing then (its test says why)
		log.Printf("warning: no sbx-test/busybox:1: %v", bbErr)
	}
	if ls.mid, err = tarLayer(store, level, midLayer); err != nil {
		return nil, err
	}
	if ls.top, err = tarLayer(store, level, topLayer); err != nil {
		return nil, err
	}
	ls.arm, err = tarLayer(store, level, func(tw *tar.Writer) error {
		return writeFile(tw, "hello", 0o644, []byte("arm64 only\n"))
	})
	return ls, err
}

// testImage is an image or index to push under ref.
type testImage struct {
	ref string
	img any // v1.Image or v1.ImageIndex
}

func buildImages(ls *testLayers) ([]testImage, error) {
	plat := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	debCfg := v1.Config{Env: []string{debPath}, WorkingDir: "/", Cmd: []string{"bash"}}
	debian, err := image(false, plat, debCfg, layerAdd(ls.full, "rootfs of the base template"))
	if err != nil {
		return nil, err
	}
	noUser, err := image(false, plat, debCfg, layerAdd(ls.nouser, "rootfs of the base template without user"))
	if err != nil {
		return nil, err
	}
	multi, err := image(true, plat, debCfg, layerAdd(ls.full, "rootfs of the base template"),
		layerAdd(ls.mid, "opt/marker=mid, opt/gone, opt/dir/{a,b}"),
		layerAdd(ls.top, "opt/marker=top, whiteouts opt/gone etc/motd, opaque opt/dir with c"))
	if err != nil {
		return nil, err
	}
	armPlat := v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	armImg, err := image(true, armPlat, v1.Config{Cmd: []string{"/hello"}}, layerAdd(ls.arm, "arm64 only"))
	if err != nil {
		return nil, err
	}
	debIdx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.DockerManifestList),
		mutate.IndexAddendum{Add: debian, Descriptor: v1.Descriptor{Platform: &plat}})
	armIdx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: armImg, Descriptor: v1.Descriptor{Platform: &armPlat}})
	imgs := []testImage{{"sbx-test/debian:bookworm", debIdx}, {"sbx-test/debian-nouser:1", noUser}}
	if ls.busybox != nil {
		bb, err := image(true, plat, v1.Config{Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, Cmd: []string{"sh"}},
			layerAdd(ls.busybox, "static busybox"))
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, testImage{"sbx-test/busybox:1", bb})
	}
	return append(imgs, testImage{"sbx-test/multi:1", multi}, testImage{"sbx-test/arm64only:1", armIdx},
		testImage{"private/debian:1", debian}), nil
}

// push writes img to host/ref (as the private repository's user: the
// others accept anyone).
func push(host, ref string, img any) error {
	r, err := name.ParseReference(host+"/"+ref, name.Insecure)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithAuth(&authn.Basic{Username: privUser, Password: privPass})}
	switch img := img.(type) {
	case v1.Image:
		err = remote.Write(r, img, opts...)
	case v1.ImageIndex:
		err = remote.WriteIndex(r, img, opts...)
	}
	if err != nil {
		return fmt.Errorf("push %s: %w", r, err)
	}
	log.Printf("pushed %s", r)
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
