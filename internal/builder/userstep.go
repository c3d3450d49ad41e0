package builder

import (
	"context"
	"fmt"
	"strings"

	"github.com/sbx-dev/sbx/internal/store"
)

// A USER step does what E2B's build server does for it
// (orchestrator template/build commands/user.go): if the stack has no such
// account, it creates one as root in a build sandbox, as busybox's
// `adduser -D -g ""` there: home /home/NAME (made from /etc/skel and owned
// by it), a group of its own name, root's login shell, no password, no
// sudo (the SDK's setUser never asks for it). Later steps run as that user
// and, unless a WORKDIR step set one, in its home (E2B leaves the workdir
// unset, so envd starts them in the user's home: the docs' setUser("guest")
// then pwd is /home/guest). A name busybox's adduser would refuse fails the
// build at the USER step.

// ensureAccount creates account $1 (already checked by validUserName) in
// the build sandbox unless it exists, with useradd (Debian, Ubuntu,
// Fedora) or busybox's adduser (Alpine).
const ensureAccount = `u=$1
id -u "$u" >/dev/null 2>&1 && exit 0
sh=$(sed -n 's/^root:\([^:]*:\)\{5\}//p' /etc/passwd); [ -n "$sh" ] || sh=/bin/sh
if command -v useradd >/dev/null 2>&1; then exec useradd -m -U -d "/home/$u" -s "$sh" "$u"
elif command -v adduser >/dev/null 2>&1; then exec adduser -D -g "" -h "/home/$u" -s "$sh" "$u"
fi
echo "the image has neither useradd nor adduser to create user $u" >&2; exit 1`

// validUserName reports whether name is an account name busybox's adduser
// (E2B's) takes: letters, digits, '.', '_', '-' (not first), an optional
// trailing '$', at most 32 bytes; a numeric name is a uid, never created.
func validUserName(name string) error {
	s := strings.TrimSuffix(name, "$")
	ok := s != "" && len(name) <= 32 && s[0] != '-'
	for _, c := range s {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("failed to create user: invalid user name %q: use letters, digits, '.', '_' and '-' (not first)", name)
	}
	return nil
}

// passwdHome finds account user (a name or a numeric uid) in the text of
// an /etc/passwd and returns its home.
func passwdHome(passwd, user string) (home string, found bool) {
	_, numeric := plainUser(user)
	numeric = !numeric
	for _, line := range strings.Split(passwd, "\n") {
		f := strings.Split(line, ":")
		if len(f) < 6 {
			continue
		}
		if (numeric && f[2] == user) || (!numeric && f[0] == user) {
			return f[5], true
		}
	}
	return "", false
}

// accountHome reads the home of user in the stack's /etc/passwd.
func (s *Service) accountHome(ctx context.Context, stack []string, user string) (string, bool, error) {
	lower, err := s.reg.lower(ctx, stack, false)
	if err != nil {
		return "", false, err
	}
	v, err := openView(s.cfg.TmpDir, lower)
	if err != nil {
		return "", false, err
	}
	defer v.close()
	passwd, err := v.readFile("/etc/passwd", 4<<20)
	if err != nil {
		return "", false, err
	}
	home, found := passwdHome(string(passwd), user)
	return home, found, nil
}

// userStep applies a USER step to st: the account is made in a layer when
// the stack lacks it, and steps then start in its home unless a WORKDIR
// step set their directory.
func (s *Service) userStep(ctx context.Context, b *store.BuildRec, lg *buildLog, name string, st *state, step Step, key string) error {
	user, _, _ := strings.Cut(step.Args[0], ":")
	acct, isName := plainUser(user) // "" is root
	lookup := user
	if isName {
		if err := validUserName(acct); err != nil {
			return err
		}
		lookup = acct
	}
	home, found, err := s.accountHome(ctx, st.layers, lookup)
	if err != nil {
		return err
	}
	switch {
	case found:
		st.key = key
	case !isName:
		return fmt.Errorf("user %s: no account with that uid in the image's /etc/passwd", user)
	default:
		if err := s.layerStep(ctx, b, lg, name, st, Step{Type: "USER", Args: []string{acct}}, key); err != nil {
			return err
		}
		home = "/home/" + acct
	}
	st.cfg.User, st.run.user = step.Args[0], step.Args[0]
	if !st.run.workdirSet && home != "" {
		st.run.workdir = home
	}
	return nil
}

// parentHome starts the steps over a parent template that set a user but
// no workdir in that user's home, as E2B's (envd's default cwd).
func (s *Service) parentHome(ctx context.Context, st *state) error {
	if st.run.workdirSet || st.run.user == stepUser {
		return nil
	}
	user, _, _ := strings.Cut(st.run.user, ":")
	if name, ok := plainUser(user); ok {
		user = name
	}
	home, found, err := s.accountHome(ctx, st.layers, user)
	if err == nil && found && home != "" {
		st.run.workdir = home
	}
	return err
}
