package builder

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sbx-dev/sbx/internal/sandbox"
)

// DefaultTag is the tag every ready build gets and a bare name resolves to.
const DefaultTag = "latest"

// e2bDefaultTag is E2B's name of its default tag (infra id.DefaultTag):
// E2B's API takes "name:default" as the bare name (id.ParseName) and
// refuses to remove it. sbx's default tag keeps its name in the store, in
// refs ("name:latest") and in sbx's own CLI and API, and takes E2B's as
// another name of it; the E2B tag endpoints the SDK reads speak E2B's
// (WireTag, EchoTags).
const e2bDefaultTag = "default"

// WireTag is a stored tag as E2B's GET /templates/{id}/tags names it
// (Template.getTags): the default tag is E2B's "default".
func WireTag(tag string) string {
	if tag == DefaultTag {
		return e2bDefaultTag
	}
	return tag
}

// EchoTags is raw as E2B's POST /templates/tags answers it (its
// id.ValidateAndDeduplicateTags): each tag trimmed and lowercased, kept once
// in first-seen order, E2B's "default" and sbx's "latest" each as given.
// raw is assumed to have passed NormTags.
func EchoTags(raw []string) []string {
	out := make([]string, 0, len(raw))
	for _, t := range raw {
		if t = strings.ToLower(strings.TrimSpace(t)); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// canonTag is tag with E2B's name of the default tag read as DefaultTag.
func canonTag(tag string) string {
	if strings.EqualFold(tag, e2bDefaultTag) {
		return DefaultTag
	}
	return tag
}

// NormTags is E2B's id.ValidateAndDeduplicateTags for POST and DELETE
// /templates/tags: each tag trimmed and lowercased, then valid (1-64 of
// a-z, 0-9, '-', '_', '.'), kept once in first-seen order. No tag at all is
// an error, as E2B's "At least one tag is required".
func NormTags(tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, fmt.Errorf("%w: at least one tag is required", sandbox.ErrInvalid)
	}
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for _, raw := range tags {
		tag := canonTag(strings.ToLower(strings.TrimSpace(raw)))
		if !validName(tag) {
			return nil, fmt.Errorf("%w: tag %.64q: use 1-64 of a-z, 0-9, '-', '_', '.'", sandbox.ErrInvalid, raw)
		}
		if !seen[tag] {
			seen[tag] = true
			out = append(out, tag)
		}
	}
	return out, nil
}

// CheckRemoval refuses, as E2B's DELETE /templates/tags does before it looks
// the name up, a name that carries a tag and the removal of DefaultTag
// (which would leave the bare name nothing to resolve). tags are NormTags'.
func CheckRemoval(name string, tags []string) error {
	if strings.Contains(name, ":") {
		return fmt.Errorf("%w: template name %.64q should not contain a tag, use the 'tags' field instead", sandbox.ErrInvalid, name)
	}
	for _, tag := range tags {
		if tag == DefaultTag {
			// E2B's words ("Cannot delete the 'default' tag"), with sbx's name
			return fmt.Errorf("%w: cannot delete the '%s' tag (%q)", sandbox.ErrInvalid, e2bDefaultTag, DefaultTag)
		}
	}
	return nil
}
