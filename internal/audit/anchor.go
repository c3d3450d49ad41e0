package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Anchor keeps the log's head outside the log: signed checkpoints (seq and
// hash of the newest record, hash of the first, the oldest seq kept) appended to a file in a
// directory apart from the data dir, signed with an ed25519 key kept there
// too. Whoever can rewrite the data dir but not the anchor dir can then no
// longer cut the log short, restore an older copy or swap in another log
// without Verify noticing (see VerifyAnchored).
type Anchor struct {
	key  ed25519.PrivateKey
	path string // checkpoint file

	mu    sync.Mutex // serialises appends to and rewrites of the checkpoint file
	lines int        // checkpoints in the file, as far as this process knows (mu)
}

// Checkpoint is one signed head of the log.
type Checkpoint struct {
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`    // hash of record Seq ("" when Seq is 0)
	Genesis string `json:"genesis"` // hash of record 1 ("" when Seq is 0)
	// First is the oldest record the log keeps from then on: records before
	// it were (or are about to be) rotated away. 0 in checkpoints from
	// before rotation: 1.
	First uint64    `json:"first,omitempty"`
	Time  time.Time `json:"time"`
	Final bool      `json:"final,omitempty"` // written as the daemon stopped
	Sig   string    `json:"sig,omitempty"`   // ed25519 over the JSON without sig, hex
}

// Key and checkpoint file names under the anchor dir.
const (
	keyName = "audit-ed25519.key"
	pubName = "audit-ed25519.pub"
)

// CheckpointPath is the checkpoint file of the log in dataDir: one per data
// dir (named by the hash of its absolute path), so daemons sharing an
// anchor dir keep apart.
func CheckpointPath(anchorDir, dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(anchorDir, "checkpoints-"+hex.EncodeToString(sum[:8])+".jsonl"), nil
}

// OpenAnchor loads the signing key from anchorDir, generating it (0600,
// dir 0700) on first use, for the log of dataDir.
func OpenAnchor(anchorDir, dataDir string) (*Anchor, error) {
	if err := os.MkdirAll(anchorDir, 0o700); err != nil {
		return nil, fmt.Errorf("audit anchor dir: %w", err)
	}
	key, err := loadOrCreateKey(anchorDir)
	if err != nil {
		return nil, err
	}
	p, err := CheckpointPath(anchorDir, dataDir)
	if err != nil {
		return nil, err
	}
	if err := dropTornTail(p); err != nil {
		return nil, err
	}
	return &Anchor{key: key, path: p}, nil
}

// dropTornTail cuts an unterminated last line off the checkpoint file (a
// crash in the middle of writing one), so the next checkpoint starts on a
// line of its own. ReadCheckpoints ignores such a line too.
func dropTornTail(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && (len(b) == 0 || b[len(b)-1] == '\n')) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit checkpoints: %w", err)
	}
	keep := bytes.LastIndexByte(b, '\n') + 1
	if err := os.Truncate(path, int64(keep)); err != nil {
		return fmt.Errorf("audit checkpoints: drop torn last line: %w", err)
	}
	return nil
}

// Public is the key checkpoints verify with.
func (a *Anchor) Public() ed25519.PublicKey { return a.key.Public().(ed25519.PublicKey) }

// Path is the checkpoint file.
func (a *Anchor) Path() string { return a.path }

func loadOrCreateKey(dir string) (ed25519.PrivateKey, error) {
	kp := filepath.Join(dir, keyName)
	b, err := os.ReadFile(kp)
	if err == nil {
		seed, derr := hex.DecodeString(string(trimNL(b)))
		if derr != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("corrupt audit signing key %s", kp)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read audit signing key: %w", err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(kp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create audit signing key: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(priv.Seed()) + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("write audit signing key: %w", err)
	}
	_ = os.WriteFile(filepath.Join(dir, pubName), []byte(hex.EncodeToString(pub)+"\n"), 0o644)
	return priv, nil
}

// LoadPublicKey reads the anchor dir's public key (from the private key
// file when readable, else audit-ed25519.pub).
func LoadPublicKey(anchorDir string) (ed25519.PublicKey, error) {
	if b, err := os.ReadFile(filepath.Join(anchorDir, keyName)); err == nil {
		seed, derr := hex.DecodeString(string(trimNL(b)))
		if derr == nil && len(seed) == ed25519.SeedSize {
			return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), nil
		}
	}
	b, err := os.ReadFile(filepath.Join(anchorDir, pubName))
	if err != nil {
		return nil, fmt.Errorf("audit anchor public key: %w", err)
	}
	pub, err := hex.DecodeString(string(trimNL(b)))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("corrupt audit public key in %s", anchorDir)
	}
	return pub, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// write signs c and appends it to the checkpoint file, fsync'd.
func (a *Anchor) write(c Checkpoint) error {
	c.Sig = ""
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	c.Sig = hex.EncodeToString(ed25519.Sign(a.key, body))
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	if err := appendLine(f, line); err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	a.lines++
	return nil
}

// appendLine appends line and a newline to f, fsync'd, and closes f. A
// write cut short (disk full) is truncated away, so that the next
// checkpoint does not land on the end of a torn line and make the file
// unreadable.
func appendLine(f *os.File, line []byte) error {
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return err
	}
	_, werr := f.Write(append(line, '\n'))
	if werr != nil {
		werr = errors.Join(werr, f.Truncate(off))
	}
	return errors.Join(werr, f.Sync(), f.Close())
}

// compactIfDue compacts the checkpoint file once it holds compactAt
// checkpoints (compact.go). A failed compaction is retried keepRecent
// checkpoints later.
func (a *Anchor) compactIfDue() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lines < compactAt {
		return nil
	}
	err := a.compactLocked()
	if err != nil {
		a.lines -= keepRecent
	}
	return err
}

// ReadCheckpoints reads and checks the signature of every checkpoint in
// path. A missing file is os.ErrNotExist; a bad signature or line is an
// error (the checkpoint file itself was tampered with).
func ReadCheckpoints(path string, pub ed25519.PublicKey) ([]Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, cps, err := parseCheckpoints(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint file %s %w", path, err)
	}
	for i, c := range cps {
		sig, _ := hex.DecodeString(c.Sig)
		c.Sig = ""
		body, _ := json.Marshal(c)
		if !ed25519.Verify(pub, body, sig) {
			return nil, fmt.Errorf("checkpoint file %s line %d: bad signature (the checkpoint file was tampered with, or signed by another key)", path, i+1)
		}
	}
	return cps, nil
}

// parseCheckpoints splits a checkpoint file's bytes into its lines and
// their checkpoints (signatures unchecked). An unterminated last line is a
// torn write, not a checkpoint: it is left out. A line that is not a
// checkpoint is an error naming it ("line N: …").
func parseCheckpoints(b []byte) (lines [][]byte, cps []Checkpoint, err error) {
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1]
	}
	for l := range bytes.Lines(b) {
		l = l[:len(l)-1]
		var c Checkpoint
		if err := json.Unmarshal(l, &c); err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", len(lines)+1, err)
		}
		lines, cps = append(lines, l), append(cps, c)
	}
	return lines, cps, nil
}
