// Package version names the build of sbx: the daemon reports it on
// GET /sbx/version and the CLI prints it with `sbx version`.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release; builds set it with
// -ldflags "-X github.com/sbx-dev/sbx/internal/version.Version=v1.2.3".
var Version = "0.1.0-dev"

// Info describes one build. Commit is empty when the build carries no VCS
// stamp (-buildvcs=false).
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's build information.
func Get() Info {
	in := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				in.Commit = s.Value
			}
		}
	}
	return in
}
