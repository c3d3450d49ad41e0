package main

import (
	"fmt"

	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/version"
)

// versionCmd is `sbx version`: the client's build, then the daemon's (GET
// /sbx/version). It exits 1 if the daemon could not be asked.
type versionCmd struct {
	JSON bool `name:"json" help:"print {client, server} as JSON"`
}

func (v *versionCmd) run(e *env) int {
	out := struct {
		Client version.Info          `json:"client"`
		Server *client.ServerVersion `json:"server,omitempty"`
	}{Client: version.Get()}
	code := 0
	cf := clientFlags{url: e.root.URL, apiKey: e.root.APIKey}
	c, err := cf.client()
	if err == nil {
		out.Server, err = c.Version(e.ctx)
	}
	if err != nil {
		e.errorf("server: %v", err)
		code = 1
	}
	if v.JSON {
		return max(code, printJSON(e.std, out))
	}
	printVersion(e, "Client:", out.Client.Version, out.Client.Commit, out.Client.GoVersion, out.Client.Platform)
	if s := out.Server; s != nil {
		printVersion(e, "Server: "+e.root.URL, s.Version, s.Commit, s.GoVersion, s.Platform)
	}
	return code
}

// printVersion prints one build; the server's fields are the server's
// words, printed as text (cellText).
func printVersion(e *env, title, ver, commit, goVer, platform string) {
	if commit == "" {
		commit = "(not stamped)"
	}
	fmt.Fprintf(e.std.out, "%s\n  Version: %s\n  Commit:  %s\n  Go:      %s\n  OS/Arch: %s\n",
		cellText(title), cellText(ver), cellText(commit), cellText(goVer), cellText(platform))
}
