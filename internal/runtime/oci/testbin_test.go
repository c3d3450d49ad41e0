package oci

import "os"

// testConfig is the Config of the tests' runtimes of kind: state dir state
// and, for runsc, the binary named by SBX_RUNSC when it is set (a build other
// than the installed one, e.g. scripts/build-runsc.sh's output); else the
// default lookup (/opt/sbx/bin/runsc, PATH).
func testConfig(kind, state string) Config {
	c := Config{StateDir: state}
	if kind == "runsc" {
		c.Binary = os.Getenv("SBX_RUNSC")
	}
	return c
}
