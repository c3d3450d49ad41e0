// Package identity holds the agent's view of who is calling and with what
// defaults: Linux users looked up in the sandbox's own /etc/passwd, and the
// state set by the daemon through /init (access token, default user, env).
package identity

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrUnknownUser is returned (wrapped) when a user does not exist in the
// sandbox; its text is envd's ("invalid username: 'root123'").
var ErrUnknownUser = errors.New("invalid username")

// User is a Linux user inside the sandbox.
type User struct {
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32 // supplementary groups, including GID
	Home   string
	Shell  string
}

// Files are the account databases read by Lookup; tests point them elsewhere.
type Files struct {
	Passwd, Group string
}

// DefaultFiles are the sandbox's own account databases.
var DefaultFiles = Files{Passwd: "/etc/passwd", Group: "/etc/group"}

// Lookup finds user name in f. It rereads the files on every call so users
// added inside the sandbox (useradd) are seen at once.
func (f Files) Lookup(name string) (User, error) {
	if name == "" || strings.ContainsAny(name, ":\n\x00") {
		return User{}, fmt.Errorf("%w: %q", ErrUnknownUser, name)
	}
	var u User
	found := false
	err := scan(f.Passwd, func(fields []string) bool {
		if len(fields) < 7 || fields[0] != name {
			return true
		}
		uid, err1 := strconv.ParseUint(fields[2], 10, 32)
		gid, err2 := strconv.ParseUint(fields[3], 10, 32)
		if err1 != nil || err2 != nil {
			return true
		}
		u = User{Name: name, UID: uint32(uid), GID: uint32(gid), Home: fields[5], Shell: fields[6]}
		found = true
		return false
	})
	if err != nil {
		return User{}, fmt.Errorf("read %s: %w", f.Passwd, err)
	}
	if !found {
		return User{}, fmt.Errorf("%w: '%s'", ErrUnknownUser, name)
	}
	u.Groups = f.groupsOf(name, u.GID)
	if u.Home == "" {
		u.Home = "/"
	}
	return u, nil
}

// groupsOf lists the groups that name belongs to, primary first.
func (f Files) groupsOf(name string, primary uint32) []uint32 {
	groups := []uint32{primary}
	_ = scan(f.Group, func(fields []string) bool {
		if len(fields) < 4 {
			return true
		}
		for _, m := range strings.Split(fields[3], ",") {
			if m != name {
				continue
			}
			if gid, err := strconv.ParseUint(fields[2], 10, 32); err == nil && uint32(gid) != primary {
				groups = append(groups, uint32(gid))
			}
		}
		return true
	})
	return groups
}

// GroupName returns the name of gid, or its number as a string.
func (f Files) GroupName(gid uint32) string {
	return nameOf(f.Group, gid)
}

// UserName returns the name of uid, or its number as a string.
func (f Files) UserName(uid uint32) string {
	return nameOf(f.Passwd, uid)
}

func nameOf(path string, id uint32) string {
	want := strconv.FormatUint(uint64(id), 10)
	name := want
	_ = scan(path, func(fields []string) bool {
		if len(fields) >= 3 && fields[2] == want {
			name = fields[0]
			return false
		}
		return true
	})
	return name
}

// scan calls fn with the colon-separated fields of each line until fn returns false.
func scan(path string, fn func([]string) bool) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	s := bufio.NewScanner(fh)
	for s.Scan() {
		line := s.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if !fn(strings.Split(line, ":")) {
			return nil
		}
	}
	return s.Err()
}
