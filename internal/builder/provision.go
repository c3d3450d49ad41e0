package builder

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// provisionVersion is part of the provision layer's cache key: bump it when
// provisioning changes.
const provisionVersion = "provision/v3"

// resolvPlaceholder is the resolv.conf of templates: sbx binds the
// sandbox's resolver over it.
const resolvPlaceholder = "# placeholder: sbx binds the sandbox's resolver over this file\nnameserver 1.1.1.1\n"

// provision writes, into the new layer dir, what every sandbox needs on top
// of any image, reading the image through v: the user "user" (uid and gid
// 1000, home /home/user, passwordless sudo), hosts, hostname and a resolver
// placeholder, /.sbx, the agent's mount point, and a login profile that
// execs nothing to tell root (fastProfile). It never edits a file of the
// image in place: changed files are written whole into dir.
func provision(v *rootView, dir string, log func(string, ...any)) error {
	if err := addUser(v, dir, log); err != nil {
		return err
	}
	if err := fastProfile(v, dir); err != nil {
		return err
	}
	for _, f := range []struct{ path, data string }{
		{"etc/hostname", "e2b.local\n"},
		{"etc/hosts", "127.0.0.1\tlocalhost\n127.0.1.1\te2b.local e2b\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
		{"etc/resolv.conf", resolvPlaceholder},
	} {
		if err := writeInto(v, dir, f.path, []byte(f.data), 0o644, 0, 0); err != nil {
			return err
		}
	}
	if err := mkdirInto(v, dir, ".sbx", 0o755, 0, 0); err != nil {
		return err
	}
	if !v.isExecutable("/usr/bin/sudo") && !v.isExecutable("/bin/sudo") {
		log("the image has no sudo: `sudo` will not work in its sandboxes (install it in a step to have it)")
	}
	return nil
}

// fastProfile rewrites an /etc/profile that runs `id -u` to tell root
// (Debian's and Ubuntu's do, and every command of the E2B SDKs is a login
// shell, `bash -l -c`) to ask the shell's EUID first: bash sets it, so a
// login forks and execs no `id`, which costs ≈ 10 ms under gVisor (half of
// what `bash -l -c true` costs there); shells without EUID still run `id`.
// What the profile does is unchanged. Debian's base-files leaves a changed
// /etc/profile alone on upgrades (it replaces only an unmodified default).
func fastProfile(v *rootView, dir string) error {
	const slow, fast = `"$(id -u)"`, `"${EUID:-$(id -u)}"`
	const limit = 1 << 20
	st, ok := v.lstat("/etc/profile")
	if !ok || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > limit {
		return nil // left as the image has it: a speed-up, never a build's failure
	}
	data, err := v.readFile("/etc/profile", limit)
	if err != nil || !bytes.Contains(data, []byte(slow)) {
		return err
	}
	data = bytes.ReplaceAll(data, []byte(slow), []byte(fast))
	return writeInto(v, dir, "etc/profile", data, os.FileMode(st.Mode&0o777), st.Uid, st.Gid)
}

// addUser adds "user" to passwd, group and shadow unless it is there, makes
// its home, and gives it passwordless sudo.
func addUser(v *rootView, dir string, log func(string, ...any)) error {
	passwd, err := v.readFile("/etc/passwd", 4<<20)
	if err != nil {
		return fmt.Errorf("read /etc/passwd: %w", err)
	}
	if !hasEntry(passwd, "root") {
		passwd = append(passwd, "root:x:0:0:root:/root:/bin/sh\n"...)
		log("the image's /etc/passwd has no root: added")
	}
	home := "/home/user"
	if !hasEntry(passwd, "user") {
		shell := "/bin/sh"
		if v.isExecutable("/bin/bash") {
			shell = "/bin/bash"
		}
		passwd = appendLine(passwd, "user:x:1000:1000::"+home+":"+shell)
		log("added user 'user' (uid 1000, home %s)", home)
	} else {
		home = field(passwd, "user", 5)
	}
	if err := writeInto(v, dir, "etc/passwd", passwd, 0o644, 0, 0); err != nil {
		return err
	}
	if err := addGroup(v, dir); err != nil {
		return err
	}
	if err := addShadow(v, dir); err != nil {
		return err
	}
	if home != "" && home != "/" {
		if _, ok := v.stat(home); !ok {
			if err := makeHome(v, dir, strings.TrimPrefix(home, "/")); err != nil {
				return err
			}
		}
	}
	if err := mkdirInto(v, dir, "etc/sudoers.d", 0o750, 0, 0); err != nil {
		return err
	}
	return writeInto(v, dir, "etc/sudoers.d/user", []byte("user ALL=(ALL:ALL) NOPASSWD: ALL\n"), 0o440, 0, 0)
}

// makeHome makes the user's home in dir as useradd -m does: mode 0755,
// owned by 1000:1000, with the image's /etc/skel files (regular files at
// its top, read through the view) copied in, owned by the user.
func makeHome(v *rootView, dir, home string) error {
	for _, name := range v.names("/etc/skel") {
		st, ok := v.lstat("/etc/skel/" + name)
		if !ok || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		data, err := v.readFile("/etc/skel/"+name, 1<<20)
		if err != nil {
			return err
		}
		if err := writeInto(v, dir, home+"/"+name, data, os.FileMode(st.Mode&0o777), 1000, 1000); err != nil {
			return err
		}
	}
	return mkdirInto(v, dir, home, 0o755, 1000, 1000) // after its files: writeInto makes parents root's
}

func addGroup(v *rootView, dir string) error {
	group, err := v.readFile("/etc/group", 4<<20)
	if err != nil {
		return fmt.Errorf("read /etc/group: %w", err)
	}
	if !hasEntry(group, "root") {
		group = appendLine(group, "root:x:0:")
	}
	if !hasEntry(group, "user") {
		group = appendLine(group, "user:x:1000:")
	}
	if hasEntry(group, "sudo") {
		group = addMember(group, "sudo", "user")
	}
	return writeInto(v, dir, "etc/group", group, 0o644, 0, 0)
}

func addShadow(v *rootView, dir string) error {
	shadow, err := v.readFile("/etc/shadow", 4<<20)
	if err != nil || shadow == nil || hasEntry(shadow, "user") {
		return err
	}
	st, _ := v.stat("/etc/shadow")
	shadow = appendLine(shadow, "user:*:19000:0:99999:7:::")
	return writeInto(v, dir, "etc/shadow", shadow, os.FileMode(st.Mode&0o777), 0, st.Gid)
}

// hasEntry reports whether a passwd/group-style file has a line for name.
func hasEntry(db []byte, name string) bool {
	return field(db, name, 0) != ""
}

// field returns field i of name's line ("" if absent).
func field(db []byte, name string, i int) string {
	for _, line := range strings.Split(string(db), "\n") {
		f := strings.Split(line, ":")
		if len(f) > i && f[0] == name {
			return f[i]
		}
	}
	return ""
}

func appendLine(db []byte, line string) []byte {
	if len(db) > 0 && !bytes.HasSuffix(db, []byte("\n")) {
		db = append(db, '\n')
	}
	return append(db, line+"\n"...)
}

// addMember adds member to group's member list in an /etc/group file.
func addMember(db []byte, group, member string) []byte {
	lines := strings.Split(string(db), "\n")
	for i, line := range lines {
		f := strings.Split(line, ":")
		if len(f) != 4 || f[0] != group {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == member {
				return db
			}
		}
		if f[3] != "" {
			f[3] += ","
		}
		f[3] += member
		lines[i] = strings.Join(f, ":")
	}
	return []byte(strings.Join(lines, "\n"))
}

// writeInto writes rel into the new layer dir, creating its parents there
// with the attributes they have in the image (an overlay upper directory's
// attributes win over the lower's, so a parent made with other ones would
// change the image).
func writeInto(v *rootView, dir, rel string, data []byte, mode os.FileMode, uid, gid uint32) error {
	if err := parentsInto(v, dir, filepath.Dir(rel)); err != nil {
		return err
	}
	p := filepath.Join(dir, rel)
	_ = os.Remove(p)
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	return os.Lchown(p, int(uid), int(gid))
}

// mkdirInto makes directory rel in dir: with the image's attributes if the
// image has it, else with mode, uid and gid.
func mkdirInto(v *rootView, dir, rel string, mode os.FileMode, uid, gid uint32) error {
	if err := parentsInto(v, dir, filepath.Dir(rel)); err != nil {
		return err
	}
	if st, ok := v.stat("/" + rel); ok && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		mode, uid, gid = os.FileMode(st.Mode&0o7777), st.Uid, st.Gid
	}
	return mkdirAttr(filepath.Join(dir, rel), mode, uid, gid)
}

// parentsInto makes rel and its parents in dir like mkdirInto does.
func parentsInto(v *rootView, dir, rel string) error {
	if rel == "." || rel == "/" || rel == "" {
		return nil
	}
	if err := parentsInto(v, dir, filepath.Dir(rel)); err != nil {
		return err
	}
	mode, uid, gid := os.FileMode(0o755), uint32(0), uint32(0)
	if st, ok := v.stat("/" + rel); ok && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		mode, uid, gid = os.FileMode(st.Mode&0o7777), st.Uid, st.Gid
	}
	return mkdirAttr(filepath.Join(dir, rel), mode, uid, gid)
}

func mkdirAttr(p string, mode os.FileMode, uid, gid uint32) error {
	if err := os.Mkdir(p, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	if err := os.Lchown(p, int(uid), int(gid)); err != nil {
		return err
	}
	return unix.Chmod(p, uint32(mode)) // raw bits: setgid/sticky of the image's dir too
}
