package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// initTokenEnv carries the daemon's /init secret into the agent.
const initTokenEnv = "SBX_AGENT_INIT_TOKEN"

// takeInitToken returns the /init secret and removes it from the agent's
// environment, so no child inherits it, and scrubs it from the agent's
// initial environment block, so /proc/<agent>/environ no longer shows it to
// root code in the sandbox. Scrubbing is best effort.
func takeInitToken() string {
	token, ok := os.LookupEnv(initTokenEnv)
	if !ok {
		return ""
	}
	token = strings.Clone(token) // the runtime's copy may point into the block
	_ = os.Unsetenv(initTokenEnv)
	_ = scrubEnvBlock(initTokenEnv + "=")
	return token
}

// scrubEnvBlock overwrites, in this process's initial environment block
// (what /proc/self/environ shows), the value of every entry starting with
// prefix with 'x' bytes.
func scrubEnvBlock(prefix string) error {
	start, end, err := envBlock()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	buf := make([]byte, end-start)
	if _, err := mem.ReadAt(buf, int64(start)); err != nil {
		return err
	}
	changed := false
	for off := 0; off < len(buf); {
		n := bytes.IndexByte(buf[off:], 0)
		if n < 0 {
			n = len(buf) - off
		}
		if entry := buf[off : off+n]; bytes.HasPrefix(entry, []byte(prefix)) {
			for i := len(prefix); i < len(entry); i++ {
				entry[i] = 'x'
			}
			changed = true
		}
		off += n + 1
	}
	if !changed {
		return nil
	}
	_, err = mem.WriteAt(buf, int64(start))
	return err
}

// envBlock returns env_start and env_end from /proc/self/stat (fields 50
// and 51, counted after the parenthesised command name).
func envBlock() (uint64, uint64, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 49 {
		return 0, 0, os.ErrInvalid
	}
	start, err1 := strconv.ParseUint(f[47], 10, 64)
	end, err2 := strconv.ParseUint(f[48], 10, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, os.ErrInvalid
	}
	return start, end, nil
}
