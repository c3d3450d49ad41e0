package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// detachConsole points the agent's stdout and stderr at /dev/null. The
// runtime opened them on a host file, the sandbox's console log (the daemon
// reads it when a start fails, so the agent keeps it until it listens).
// Left open, any root process in the sandbox could write into that host
// file without bound through /proc/1/fd/1 or /proc/1/fd/2. The agent logs
// nothing to it afterwards either: it holds no descriptor of it at all.
func detachConsole() error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(null.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return nil
}
