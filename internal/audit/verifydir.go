package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// VerifyDir checks the audit log of dataDir: its hash chain and, unless
// unanchored, the signed checkpoints of its head in anchorDir. An
// *VerifyError says what is wrong with the log (edited, truncated,
// rolled back, replaced); other errors are about reading it.
func VerifyDir(dataDir, anchorDir string, unanchored bool) (Head, error) {
	cps, err := dirCheckpoints(dataDir, anchorDir, unanchored)
	if err != nil {
		return Head{}, err
	}
	return VerifyAnchored(filepath.Join(dataDir, FileName), cps)
}

// dirCheckpoints reads the signed checkpoints of the log (none when
// unanchored). A missing checkpoint file is an error: the head is not
// anchored, so truncation could not be seen.
func dirCheckpoints(dataDir, anchorDir string, unanchored bool) ([]Checkpoint, error) {
	if unanchored {
		return nil, nil
	}
	pub, err := LoadPublicKey(anchorDir)
	if err != nil {
		return nil, fmt.Errorf("%w (pass --anchor-dir, or --unanchored to check the chain alone)", err)
	}
	p, err := CheckpointPath(anchorDir, dataDir)
	if err != nil {
		return nil, err
	}
	cps, err := ReadCheckpoints(p, pub)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no checkpoints for %s in %s: the log's head is not anchored (pass --unanchored to check the chain alone)", dataDir, anchorDir)
	}
	return cps, err
}
