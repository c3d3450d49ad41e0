package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/sbx-dev/sbx/client"
)

// Exit codes of the client commands. sbx run passes the command's own exit
// code through; these are for failures of sbx itself (as docker run does).
const (
	exitUsage  = 2   // bad flags or arguments
	exitInfra  = 125 // the daemon or the sandbox failed: nothing was run, or running broke
	exitKilled = 137 // the command was killed by a signal (128+SIGKILL)
	exitIntr   = 130 // interrupted (Ctrl-C, SIGTERM)
)

// stdio is where a command reads and writes; tests replace it.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

func osStdio() stdio { return stdio{os.Stdin, os.Stdout, os.Stderr} }

// clientFlags are the flags every client command has.
type clientFlags struct {
	url, apiKey string
	// keyEnv: an unset apiKey is SBX_API_KEY (newFlagSet's flags, whose
	// --help must not show the key as the default)
	keyEnv bool
}

// newFlagSet returns a flag set with --url and --api-key registered, whose
// usage prints synopsis and then the flags.
func newFlagSet(name, synopsis string, std stdio, cf *clientFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(std.err)
	fs.Usage = func() {
		fmt.Fprintf(std.err, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	fs.StringVar(&cf.url, "url", envOr("SBX_URL", client.DefaultURL), "sbx daemon URL (env SBX_URL)")
	fs.StringVar(&cf.apiKey, "api-key", "", "API key (default: env SBX_API_KEY)")
	cf.keyEnv = true
	return fs
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client validates the flags and returns a client of the daemon.
func (cf *clientFlags) client() (*client.Client, error) {
	if cf.apiKey == "" && cf.keyEnv {
		cf.apiKey = os.Getenv("SBX_API_KEY")
	}
	u, err := url.Parse(cf.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("--url %q: want an origin like http://127.0.0.1:3000", cf.url)
	}
	if cf.apiKey == "" {
		return nil, fmt.Errorf("no API key: set --api-key or SBX_API_KEY")
	}
	return client.New(cf.url, cf.apiKey, client.WithUserAgent("sbx-cli")), nil
}

// kvList is a repeatable K=V flag.
type kvList map[string]string

func (l kvList) String() string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (l kvList) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	l[k] = v
	return nil
}

// Decode makes kvList a repeatable kong flag.
func (l *kvList) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("K=V", &s); err != nil {
		return err
	}
	if *l == nil {
		*l = kvList{}
	}
	return l.Set(s)
}

// parseFlags parses args; it reports the exit code to return if parsing
// ended the command (0 for --help).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	switch err := fs.Parse(args); {
	case err == flag.ErrHelp:
		return 0, false
	case err != nil:
		return exitUsage, false
	}
	return 0, true
}
