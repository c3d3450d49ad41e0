package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sbx-dev/sbx/internal/egress"
	"github.com/sbx-dev/sbx/internal/egress/rules"
	"github.com/sbx-dev/sbx/internal/sandbox"
)

// checkRules validates network.rules raw for team under the egress policy
// p (parseNetwork, for create and updateNetwork) and returns them with
// their domain keys in lower case: well-formed (rules.Parse: domains,
// header names and values, placeholders), every rule's domain reachable
// through allowOut (a rule grants nothing, and sbx applies rules only to
// connections its domain guard reads the name of), and every secret a
// value names existing for team now (a sandbox that silently sends no
// header is worse than a 400). A secret deleted later fails the requests
// that need it closed.
func (s *Server) checkRules(ctx context.Context, team string, p egress.Policy, raw json.RawMessage) (json.RawMessage, error) {
	set, err := rules.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrInvalid, err)
	}
	for _, d := range set.Domains() {
		if !allowedByName(p, d) {
			return nil, fmt.Errorf("%w: network.rules[%q]: the domain is not in allowOut (rules do not allow a domain; list it in allowOut too)",
				sandbox.ErrInvalid, ruleKey(d))
		}
	}
	if err := s.checkRuleSecrets(ctx, team, set.SecretNames()); err != nil {
		return nil, err
	}
	return lowerKeys(raw), nil
}

// lowerKeys is rules with its domain keys in lower case, as E2B stores
// them (getInfo shows them so); the rule lists are kept as sent.
func lowerKeys(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[strings.ToLower(strings.TrimSpace(k))] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return raw
	}
	return b
}

func (s *Server) checkRuleSecrets(ctx context.Context, team string, names []string) error {
	if len(names) > 0 && s.secrets == nil {
		return fmt.Errorf("%w: network.rules name secrets, and this server has no Secrets API", sandbox.ErrInvalid)
	}
	for _, name := range names {
		ok, err := s.secrets.Exists(ctx, team, name)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: network.rules: secret %q not found (create it with Secret.create first)", sandbox.ErrInvalid, truncate(name, 64))
		}
	}
	return nil
}

// allowedByName reports whether some name d matches is allowed by one of
// p's allowOut domains (an IP allowOut does not count: the guard reads no
// name for it).
func allowedByName(p egress.Policy, d egress.Domain) bool {
	for _, a := range p.AllowDoms {
		switch {
		case !d.Wildcard && a.Match(d.Name):
			return true
		case d.Wildcard && (a.Name == d.Name && a.Wildcard || a.Match("x."+d.Name) || d.Match(a.Name)):
			return true
		}
	}
	return false
}

func ruleKey(d egress.Domain) string {
	if d.Wildcard {
		return "*." + d.Name
	}
	return strings.ToLower(d.Name)
}
