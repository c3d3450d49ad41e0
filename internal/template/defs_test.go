package template

import (
	"regexp"
	"slices"
	"testing"
)

func TestDefinitions(t *testing.T) {
	pkgName := regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	// What E2B users' code relies on, in every template.
	required := []string{"python3", "python-is-python3", "nodejs", "git", "curl", "ca-certificates",
		"procps", "sudo", "ncurses-bin", "attr"}
	for _, tc := range []struct {
		name string
		apt  []string
	}{
		{"base", nil},
		{"code-interpreter-v1", []string{"python3-ipykernel", "python3-jupyter-client", "python3-numpy", "python3-pandas", "python3-matplotlib",
			"r-base-core", "r-cran-irkernel", "openjdk-17-jdk-headless", "node-typescript"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Definitions[tc.name]
			if !ok || d.Name != tc.name || !ValidName(d.Name) {
				t.Fatalf("definition %q: %+v", tc.name, d)
			}
			for _, p := range required {
				if !slices.Contains(d.Base, p) {
					t.Errorf("%s lacks %s in Base", tc.name, p)
				}
			}
			for _, p := range tc.apt {
				if !slices.Contains(d.Apt, p) {
					t.Errorf("%s lacks %s in Apt", tc.name, p)
				}
			}
			seen := map[string]bool{}
			for _, p := range d.Packages() {
				if !pkgName.MatchString(p) || seen[p] {
					t.Errorf("bad or duplicate package %q", p)
				}
				seen[p] = true
			}
		})
	}
	if got := Names(); !slices.Equal(got, []string{"base", "code-interpreter-v1"}) {
		t.Errorf("Names() = %v", got)
	}
	for name, d := range Definitions {
		if name != d.Name {
			t.Errorf("Definitions[%q].Name = %q", name, d.Name)
		}
	}
}
