package fsutil

import "github.com/sbx-dev/sbx/internal/agent/identity"

// Names maps uids and gids to names, reading the account files at most once
// per id. It is meant for one request (a listing names many entries) and is
// not safe for concurrent use.
type Names struct {
	files  identity.Files
	users  map[uint32]string
	groups map[uint32]string
}

// NewNames returns an empty cache over files.
func NewNames(files identity.Files) *Names {
	return &Names{files: files, users: map[uint32]string{}, groups: map[uint32]string{}}
}

// User returns the name of uid, or its number when it has none.
func (n *Names) User(uid uint32) string {
	if s, ok := n.users[uid]; ok {
		return s
	}
	s := n.files.UserName(uid)
	n.users[uid] = s
	return s
}

// Group returns the name of gid, or its number when it has none.
func (n *Names) Group(gid uint32) string {
	if s, ok := n.groups[gid]; ok {
		return s
	}
	s := n.files.GroupName(gid)
	n.groups[gid] = s
	return s
}
