package template

import "sort"

// Definition says what a built-in template is: a Debian tree (the
// builder's debootstrap source) with these packages, provisioned like any
// image. It is the single place where the built-in package lists live.
type Definition struct {
	Name        string
	Description string
	// Base packages, for debootstrap --include: no virtual packages here
	// (debootstrap does not resolve them).
	Base []string
	// Apt packages, installed with apt-get after debootstrap, in the tree
	// being made (virtual dependencies resolve there).
	Apt     []string
	Runtime string // preferred runtime, "" for the daemon's default
	// MemoryMB is the memory its sandboxes get when a create asks for
	// none; 0 for the daemon's default.
	MemoryMB int
}

// Suite is the Debian release of the built-in templates.
const Suite = "bookworm"

// DefaultMirror is the Debian mirror built-in templates are bootstrapped
// from unless another is given.
const DefaultMirror = "http://deb.debian.org/debian"

// basePackages is what E2B users' code relies on in every template.
var basePackages = []string{
	"python3", "python-is-python3", "nodejs", "git", "curl", "ca-certificates", "procps",
	"sudo", "ncurses-bin", "attr", "iproute2", "less",
}

// Definitions are the built-in templates, by name.
var Definitions = map[string]Definition{
	"base": {
		Name:        "base",
		Description: "Debian bookworm: bash, python3, node, git, curl, sudo; user 'user' (uid 1000)",
		Base:        basePackages,
	},
	"code-interpreter-v1": {
		Name:        "code-interpreter-v1",
		Description: "base plus a Jupyter kernel, numpy, pandas, matplotlib; R (IRkernel), Java (jshell), TypeScript",
		Base:        basePackages,
		Apt: []string{
			"python3-ipykernel", "python3-jupyter-client", "python3-numpy", "python3-pandas", "python3-matplotlib",
			// runCode's other languages: r through IRkernel, java through
			// the JDK's jshell API, typescript through the tsc API.
			"r-base-core", "r-cran-irkernel", "openjdk-17-jdk-headless", "node-typescript",
		},
		// As E2B's code-interpreter template (e2b-dev/code-interpreter
		// template/build_prod.py: memory_mb=2048): a kernel of every
		// language at once (python twice, node for js and ts, r, a JVM
		// starting) took a 1 GiB sandbox to the OOM guard's reserve, which
		// killed the R kernel or the JVM; on runsc an out-of-memory sandbox
		// ends as a whole.
		MemoryMB: 2048,
	},
}

// Names returns the names of Definitions, sorted.
func Names() []string {
	names := make([]string, 0, len(Definitions))
	for n := range Definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Packages returns every package of d: Base, then Apt.
func (d Definition) Packages() []string {
	return append(append([]string{}, d.Base...), d.Apt...)
}
