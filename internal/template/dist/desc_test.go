package dist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"
)

// TestPushRecordedDigests: a push records each layer's digests; the
// content a cached layer makes hashes to them (so a later push, to a
// registry lacking the blob, uploads what the digest says); a stale
// record makes the push retry computed and still succeed.
func TestPushRecordedDigests(t *testing.T) {
	requireRoot(t)
	r := newReg(t)
	a := built(t)
	rm := r.remote(a)
	if _, err := rm.Push(context.Background(), meta()); err != nil {
		t.Fatal(err)
	}
	for _, id := range meta().Layers {
		l := rm.cachedLayer(id)
		if l == nil {
			t.Fatalf("no recorded digests for %s", id)
		}
		dg, _ := l.Digest()
		diff, _ := l.DiffID()
		c, _ := l.Compressed()
		u, _ := l.Uncompressed()
		if got := sum(t, c); got != dg.Hex {
			t.Errorf("layer %s: compressed content %s, recorded %s", id, got, dg.Hex)
		}
		if got := sum(t, u); got != diff.Hex {
			t.Errorf("layer %s: tar %s, recorded %s", id, got, diff.Hex)
		}
	}
	r2 := newReg(t) // lacks every blob: the cached layers are uploaded
	if _, err := r2.remote(a).Push(context.Background(), meta()); err != nil {
		t.Fatalf("push with recorded digests: %v", err)
	}
	stale := `{"digest":"sha256:` + strings.Repeat("1", 64) + `","diffID":"sha256:` + strings.Repeat("2", 64) + `","size":5}`
	if err := os.WriteFile(rm.descPath(idB), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	r3 := newReg(t)
	m := meta()
	d, err := r3.remote(a).Push(context.Background(), m)
	if err != nil {
		t.Fatalf("push with a stale record: %v", err)
	}
	m.Digest = d
	if n, err := r3.remote(emptyStore(t)).Pull(context.Background(), m); err != nil || n != 2 {
		t.Fatalf("pull after a stale record's push: n=%d err=%v", n, err)
	}
}

func sum(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
