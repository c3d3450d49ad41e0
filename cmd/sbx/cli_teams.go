package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sbx-dev/sbx/client"
)

// keysCmd manages the API keys of the caller's team (E2B's /api-keys).
type keysCmd struct {
	Create keysCreateCmd `cmd:"" help:"Create an API key of your team; it is printed once."`
	Ls     keysLsCmd     `cmd:"" aliases:"list" help:"List your team's API keys (masked)."`
	Rm     keysRmCmd     `cmd:"" help:"Revoke API keys (they stop working at once)."`
}

type keysCreateCmd struct {
	Name string `arg:"" help:"a name for the key"`
}

func (k *keysCreateCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	key, err := c.CreateAPIKey(e.ctx, k.Name)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	fmt.Fprintf(e.std.err, "API key %s (%s), shown once:\n", cellText(key.ID), cellText(key.Name))
	fmt.Fprintln(e.std.out, cellText(key.Key))
	return 0
}

type keysLsCmd struct {
	JSON bool `name:"json" help:"print a JSON array (E2B's /api-keys objects, masked)"`
}

func (k *keysLsCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	keys, err := c.APIKeys(e.ctx)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	if k.JSON {
		return printJSON(e.std, keys)
	}
	if len(keys) == 0 {
		fmt.Fprintln(e.std.err, "no API keys stored for your team (a daemon's admin key is not a stored key; sbx keys create NAME makes one)")
		return 0
	}
	tw := tabwriter.NewWriter(e.std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKEY\tCREATED\tLAST USED")
	for _, k := range keys {
		used := "never"
		if k.LastUsed != nil {
			used = k.LastUsed.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s…%s\t%s\t%s\n", cellText(k.ID), cellText(k.Name), cellText(k.Mask.Prefix), cellText(k.Mask.MaskedValueSuffix), k.CreatedAt.Format(time.RFC3339), used)
	}
	_ = tw.Flush()
	return 0
}

type keysRmCmd struct {
	IDs []string `arg:"" name:"id" help:"key ids (sbx keys ls)"`
}

func (k *keysRmCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	return removeEach(e, k.IDs, "API key", func(id string) error { return c.DeleteAPIKey(e.ctx, id) })
}

// teamsCmd manages teams (admin key only: /sbx/teams).
type teamsCmd struct {
	Create teamsCreateCmd `cmd:"" help:"Create a team; its first API key is printed once."`
	Ls     teamsLsCmd     `cmd:"" aliases:"list" help:"List teams."`
	Rm     teamsRmCmd     `cmd:"" help:"Remove teams that own nothing (their keys are revoked)."`
}

type teamsCreateCmd struct {
	Name string `arg:"" help:"the team's name: 1-64 characters of [a-z0-9._-], starting with a letter or digit; unique"`
}

func (t *teamsCreateCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	tm, err := c.CreateTeam(e.ctx, t.Name)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	fmt.Fprintf(e.std.err, "team %s (%s); its API key, shown once:\n", cellText(tm.TeamID), cellText(tm.Name))
	fmt.Fprintln(e.std.out, cellText(tm.APIKey))
	return 0
}

type teamsLsCmd struct {
	JSON bool `name:"json" help:"print a JSON array (GET /sbx/teams: ids, names, key counts, what each owns, quotas)"`
}

func (l *teamsLsCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	teams, err := c.Teams(e.ctx)
	if err != nil {
		e.errorf("%v", err)
		return 1
	}
	if l.JSON {
		return printJSON(e.std, teams)
	}
	tw := tabwriter.NewWriter(e.std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKEYS\tOWNS\tCREATED")
	for _, t := range teams {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", cellText(t.TeamID), cellText(t.Name), t.Keys, owns(t.Owns), t.CreatedAt.Format(time.RFC3339))
	}
	_ = tw.Flush()
	return 0
}

type teamsRmCmd struct {
	IDs []string `arg:"" name:"id" help:"team ids (sbx teams ls)"`
}

func (t *teamsRmCmd) run(e *env) int {
	c, code := e.client()
	if c == nil {
		return code
	}
	return removeEach(e, t.IDs, "team", func(id string) error { return c.DeleteTeam(e.ctx, id) })
}

// owns is what a team holds, e.g. "1 sandboxes, 2 volumes"; "-" for nothing.
func owns(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// removeEach removes every id with rm, printing the ids removed (as sbx kill
// does); an id that does not exist is "no such <what>". It exits 1 if any
// failed.
func removeEach(e *env, ids []string, what string, rm func(string) error) int {
	rc := 0
	for _, id := range ids {
		switch err := rm(id); {
		case errors.Is(err, client.ErrNotFound):
			e.errorf("%s: no such %s", id, what)
			rc = 1
		case err != nil:
			e.errorf("%s: %v", id, err)
			rc = 1
		default:
			fmt.Fprintln(e.std.out, id)
		}
	}
	return rc
}
