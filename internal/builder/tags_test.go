package builder

import (
	"strings"
	"testing"
)

// TestE2BDefaultTag: E2B's default tag is "default" (infra id.DefaultTag):
// "name:default" is the bare name, assigning "default" moves the default,
// and it cannot be removed. sbx's default keeps its name "latest" and takes
// E2B's as another name of it. Before, "name:default" named a tag no build
// had, and removeTags(name, 'default') was taken.
func TestE2BDefaultTag(t *testing.T) {
	if n, tag := splitRef("app:default"); n != "app" || tag != DefaultTag {
		t.Errorf("app:default = %s %s", n, tag)
	}
	if n, tag := splitRef("app:Default"); n != "app" || tag != DefaultTag {
		t.Errorf("app:Default = %s %s", n, tag)
	}
	tags, err := NormTags([]string{"default", "v1"})
	if err != nil || len(tags) != 2 || tags[0] != DefaultTag {
		t.Fatalf("NormTags = %v %v", tags, err)
	}
	if err := CheckRemoval("app", tags); err == nil || !strings.Contains(err.Error(), `cannot delete the 'default' tag ("latest")`) {
		t.Errorf("removing default: %v, want E2B's words with sbx's name", err)
	}
}
