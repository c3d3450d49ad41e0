// Package volume implements E2B's volumes: named, persistent directories that
// outlive sandboxes and the daemon, mounted into sandboxes at create time and
// readable and writable without a sandbox through the volume content API.
//
// Each volume is an ext4 filesystem image of its quota's size, allocated in
// full (fallocate) when the volume is made and loop-mounted (nosuid, nodev)
// at <dir>/<id>/data: the quota is the filesystem's size, enforced by the
// kernel on every write, from the daemon or from any sandbox; the sum of
// all volumes' sizes is bounded by a node total at create. Because the
// volume is a filesystem of its own, nothing inside it (a symlink, a hard
// link, a bind) can name a host file.
//
// Files are stored with the ids a sandbox sees (uid 1000 is `user`). gVisor
// sandboxes get the data mount itself (runsc's gofer serves it); crun and runc
// sandboxes, whose uid 0 is host uid UIDBase, get <dir>/<id>/uview, an
// idmapped mount of the same filesystem that shows sandbox uid N as host uid
// UIDBase+N, so the same file has the same owner on every runtime.
//
// The content API resolves every path inside the volume with openat2
// RESOLVE_IN_ROOT (root.go): a symlink a sandbox plants resolves inside
// the volume, never outside it.
package volume
