package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sbx-dev/sbx/internal/daemon"
)

// serviceCmd is `sbx service`: the daemon as a systemd service.
type serviceCmd struct {
	Install   serviceInstallCmd   `cmd:"" help:"Install (or update) and start the daemon as a systemd service."`
	Uninstall serviceUninstallCmd `cmd:"" help:"Stop and remove the systemd service (sandboxes keep running; the key file is kept)."`
}

// serviceFiles are where the service lives.
type serviceFiles struct {
	Name    string `name:"name" default:"sbx" help:"unit name (NAME.service)"`
	UnitDir string `name:"unit-dir" default:"/etc/systemd/system" help:"directory of the unit file"`
	EnvFile string `name:"env-file" default:"/etc/sbx/sbx.env" help:"environment file with SBX_API_KEY (root only, 0600)"`
}

func (f serviceFiles) unitPath() string { return filepath.Join(f.UnitDir, f.Name+".service") }

// serviceInstallCmd writes the unit and the key file and (re)starts the
// service; re-running it after a rebuild is the upgrade.
type serviceInstallCmd struct {
	serviceFiles
	Path    string   `name:"path" default:"/opt/sbx/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" help:"PATH of the daemon (runsc is looked up on it)"`
	NoStart bool     `name:"no-start" help:"write the files only; do not run systemctl"`
	Serve   []string `arg:"" optional:"" passthrough:"" help:"sbx serve flags, after --"`
}

func (c *serviceInstallCmd) run(e *env) int {
	if len(c.Serve) > 0 && c.Serve[0] == "--" {
		c.Serve = c.Serve[1:]
	}
	if _, err := daemon.ParseFlags(c.Serve); err != nil { // a typo fails here, not in the journal
		e.errorf("sbx serve flags: %v", err)
		return exitUsage
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	key, err := ensureEnvFile(c.EnvFile, os.Getenv("SBX_API_KEY"))
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	if key != "" {
		fmt.Fprintf(e.std.out, "API key (stored in %s, readable by root only):\n\n  export SBX_API_KEY=%s\n\n", c.EnvFile, key)
	}
	unit := renderUnit(unitParams{Exec: append([]string{exe, "serve"}, c.Serve...), EnvFile: c.EnvFile, Path: c.Path})
	if err := writeFileAtomic(c.unitPath(), unit, 0o644); err != nil {
		e.errorf("%v", err)
		return 1
	}
	fmt.Fprintf(e.std.err, "wrote %s\n", c.unitPath())
	if c.NoStart {
		return 0
	}
	return c.start(e)
}

// start reloads systemd and (re)starts the unit: restart is the upgrade to
// the binary just built. systemctl returns once the daemon sent READY=1.
func (c *serviceInstallCmd) start(e *env) int {
	if err := requireSystemd(); err != nil {
		e.errorf("%v; the unit is written: start it with `systemctl enable --now %s` on a systemd host", err, c.Name)
		return 1
	}
	unit := c.Name + ".service"
	for _, args := range [][]string{{"daemon-reload"}, {"enable", unit}, {"restart", unit}} {
		if err := systemctl(e, args...); err != nil {
			e.errorf("%v (see: journalctl -u %s)", err, c.Name)
			return 1
		}
	}
	fmt.Fprintf(e.std.err, "%s is running; logs: journalctl -u %s -f\n", unit, c.Name)
	return 0
}

type serviceUninstallCmd struct {
	serviceFiles
}

func (c *serviceUninstallCmd) run(e *env) int {
	if err := requireSystemd(); err == nil {
		if err := systemctl(e, "disable", "--now", c.Name+".service"); err != nil {
			e.errorf("%v", err)
			return 1
		}
	}
	if err := os.Remove(c.unitPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		e.errorf("%v", err)
		return 1
	}
	fmt.Fprintf(e.std.err, "removed %s; %s is kept (it holds the API key)\n", c.unitPath(), c.EnvFile)
	return 0
}

// requireSystemd fails unless systemd is the running init (sd_booted(3)).
func requireSystemd() error {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return errors.New("systemd is not running on this host (PID 1 is not systemd)")
	}
	return nil
}

func systemctl(e *env, args ...string) error {
	cmd := exec.CommandContext(e.ctx, "systemctl", args...)
	cmd.Stdout, cmd.Stderr = e.std.err, e.std.err
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("systemctl %v: %w", args, err)
	}
	return nil
}
