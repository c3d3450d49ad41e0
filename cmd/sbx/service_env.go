package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ensureEnvFile makes sure path holds SBX_API_KEY, readable by root only
// (0600; the directory is made 0700 if it is new). An existing file is kept (its key stays
// valid across upgrades) and its mode tightened. A new file gets envKey, or
// a generated key, which is returned so it can be shown once.
func ensureEnvFile(path, envKey string) (generated string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if envKeyOf(b) == "" {
			return "", fmt.Errorf("%s has no SBX_API_KEY= line: add one or remove the file", path)
		}
		return "", os.Chmod(path, 0o600)
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	key := envKey
	if key == "" {
		key = newAPIKey()
		generated = key
	}
	content := "# sbx daemon environment, read by systemd (EnvironmentFile=); root only: it holds the API key\nSBX_API_KEY=" + key + "\n"
	return generated, writeFileAtomic(path, []byte(content), 0o600)
}

// envKeyOf is the value of the SBX_API_KEY= line of an environment file.
func envKeyOf(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "SBX_API_KEY="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// newAPIKey is a key of the daemon's format (e2b_ and 40 hex digits).
func newAPIKey() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return "e2b_" + hex.EncodeToString(b)
}

// writeFileAtomic writes path through a temporary file of mode perm in its
// directory and a rename: readers see the old file or the new one, and the
// content is never readable under a looser mode.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename: no such file
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
