package main

import (
	"bytes"
	"strings"
	"text/template"
)

// unitParams are what a unit file of the daemon is made from.
type unitParams struct {
	Exec    []string // sbx binary and its arguments: serve and the serve flags
	EnvFile string   // holds SBX_API_KEY; root-only
	Path    string   // PATH of the daemon (runsc is found on it)
}

// unitTemplate is the daemon's systemd unit. KillMode=process: a stop or
// restart signals the daemon only, never the runtimes' sandbox processes,
// and the next start re-adopts the sandboxes that still run
// (internal/sandbox/recover.go). Type=notify: the start completes when the
// daemon sends READY=1, i.e. once it has recovered and listens.
var unitTemplate = template.Must(template.New("unit").Parse(`# Written by "sbx service install" (scripts/up.sh --service); an install rewrites it.
[Unit]
Description=sbx: sandboxes for AI agents (E2B-compatible API)
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={{.ExecStart}}
EnvironmentFile={{.EnvFile}}
Environment={{.PathEnv}}
KillMode=process
Restart=on-failure
RestartSec=2s
TimeoutStartSec=10min
TimeoutStopSec=90s
LimitNOFILE=1048576
OOMScoreAdjust=-500

[Install]
WantedBy=multi-user.target
`))

// renderUnit is the unit file for p.
func renderUnit(p unitParams) []byte {
	quoted := make([]string, len(p.Exec))
	for i, a := range p.Exec {
		quoted[i] = systemdQuote(a)
	}
	var b bytes.Buffer
	_ = unitTemplate.Execute(&b, map[string]string{
		"ExecStart": strings.Join(quoted, " "),
		"EnvFile":   systemdEscape(p.EnvFile),
		"PathEnv":   systemdQuote("PATH=" + p.Path),
	})
	return b.Bytes()
}

// systemdQuote double-quotes s for a unit file's command line or
// Environment= (systemd.syntax(7), systemd.service(7) "Command lines"):
// backslash and quote are escaped, and the specifier and variable
// characters % and $ doubled, so s reaches the daemon unchanged.
func systemdQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(systemdEscape(s)) + `"`
}

// systemdEscape doubles % (specifiers) and $ (variable expansion).
func systemdEscape(s string) string {
	return strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
}
