package main

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
)

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
	return writeEntries(tw, [][2]string{{"opt/", ""}, {"opt/marker", "mid\n"}, {"opt/gone", "gone\n"},
		{"opt/dir/", ""}, {"opt/dir/a", "a\n"}, {"opt/dir/b", "b\n"}})
}

// topLayer: the opaque marker comes first in its directory, as docker writes it.
func topLayer(tw *tar.Writer) error {
	return writeEntries(tw, [][2]string{{"etc/", ""}, {"etc/.wh.motd", ""}, {"opt/", ""}, {"opt/.wh.gone", ""},
		{"opt/dir/", ""}, {"opt/dir/.wh..wh..opq", ""}, {"opt/dir/c", "c\n"}, {"opt/marker", "top\n"}})
}

// writeEntries writes {name, content} entries: a name ending in / is a
// directory (0755), any other a file (0644).
func writeEntries(tw *tar.Writer, entries [][2]string) error {
	for _, e := range entries {
		var err error
		if strings.HasSuffix(e[0], "/") {
			err = writeDir(tw, e[0], 0o755)
		} else {
			err = writeFile(tw, e[0], 0o644, []byte(e[1]))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
