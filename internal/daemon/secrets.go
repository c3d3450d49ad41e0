package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/secrets"
	"github.com/sbx-dev/sbx/internal/store"
	"golang.org/x/sys/unix"
)

// secretsKeyEnv holds the sealing key of secret values (hex or base64 of
// 32 bytes); it wins over --secrets-key-file.
const secretsKeyEnv = "SBX_SECRETS_KEY"

// openSecrets loads (or makes, 0600, on first start) the key that seals
// secret values, which is never in the database, and returns the secrets
// of st. The key is not logged; only where it came from is.
func openSecrets(f *Config, st *store.Store, log *slog.Logger) (*secrets.Manager, error) {
	// No core dump of the daemon: its memory holds the sealing key and
	// secrets being injected. (The file API's per-thread setresuid makes
	// the process non-dumpable anyway; this makes it so from the start.)
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		log.Warn("cannot make the daemon non-dumpable", "err", err)
	}
	path := f.secretsKeyFile
	if path == "" {
		path = filepath.Join(f.dataDir, "secrets.key")
	}
	env := os.Getenv(secretsKeyEnv)
	_ = os.Unsetenv(secretsKeyEnv) // not inherited by runtimes and tools the daemon starts
	key, generated, err := secrets.LoadKey(path, env)
	if err != nil {
		return nil, err
	}
	seal, err := secrets.NewSealer(key)
	clear(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	switch {
	case env != "":
		log.Info("secrets sealed with the key from the environment", "env", secretsKeyEnv)
	case generated:
		log.Info("secrets key generated (keep it: without it stored secrets cannot be read)", "file", path)
	default:
		log.Info("secrets sealed with the key file", "file", path)
	}
	f.sealer = seal
	return secrets.New(st, seal), nil
}
