package oci

import "os"

// defaultPath is the runtime's PATH when the daemon has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runtimeEnv is the whole environment of every runtime invocation. The
// daemon's own (its API key, proxy settings, whatever its operator
// exported) must not reach the runtime: runsc's gofer, a host process that
// lives as long as the sandbox, would hold it for the sandbox's lifetime.
// The runtimes need only PATH (crun and runsc re-execute themselves
// through /proc/self/exe).
func runtimeEnv() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	return []string{"PATH=" + path}
}
