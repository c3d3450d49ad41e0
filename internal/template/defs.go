package template

// Definition says how a template is built.
type Definition struct {
	Name string
	// Base packages for debootstrap --include (no virtual packages here).
	Base []string
	// Apt packages installed in a chroot afterwards (virtual deps resolve).
	Apt []string
}

// basePackages is what E2B users' code relies on in the base template.
var basePackages = []string{
	"python3", "python-is-python3", "nodejs", "git", "curl", "ca-certificates", "procps",
	"sudo", "ncurses-bin", "attr", "iproute2", "less", "locales", "tzdata",
}

// Definitions are the templates sbx can build.
var Definitions = map[string]Definition{
	"base": {Name: "base", Base: basePackages},
	"code-interpreter-v1": {Name: "code-interpreter-v1", Base: basePackages, Apt: []string{
		"python3-ipykernel", "python3-jupyter-client", "python3-numpy", "python3-pandas", "python3-matplotlib",
	}},
}
