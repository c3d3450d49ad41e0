package volume

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// HolderEnv, set to "1", makes a binary that calls RunHolderIfAsked first
// thing wait for its stdin to close and exit: the process that briefly
// owns the user namespace idmapped mounts are made with.
const HolderEnv = "SBX_USERNS_HOLDER"

// RunHolderIfAsked is called at the top of main (and of TestMain): in the
// holder process it never returns.
func RunHolderIfAsked() {
	if os.Getenv(HolderEnv) != "1" {
		return
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// usernsFD returns an fd of a user namespace mapping 0..65535 to
// base..base+65535 (the crun/runc sandboxes' mapping). The holder process
// exits at once; the fd keeps the namespace.
func usernsFD(base uint32) (int, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{HolderEnv + "=1"}
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(base), Size: 65536}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: m, GidMappings: m,
		GidMappingsEnableSetgroups: false, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return -1, err
	}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start user namespace holder: %w", err)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	stdin.Close()
	_ = cmd.Wait()
	if err != nil {
		return -1, fmt.Errorf("open holder's user namespace: %w", err)
	}
	return fd, nil
}

// mountIDMapped mounts at dst a clone of the mount at src whose ids are
// shifted by the user namespace usernsFD (on-disk N shows as host base+N).
func mountIDMapped(src, dst string, userns int) error {
	if mounted(dst) {
		return nil
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone volume mount: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(userns)}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("idmap volume mount: %w", err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach idmapped volume mount: %w", err)
	}
	return nil
}

func closeFD(fd int) error { return unix.Close(fd) }
