// Package oomscore ranks the processes the agent starts for the kernel's
// OOM killer: every one of them — commands, and the code interpreter's
// drivers with their kernels and whatever those fork — is worth more to it
// than the agent, and all the same amount, so that in a sandbox out of
// memory the kernel picks among them by size and never the agent (a tie
// with the agent's score would make it a candidate).
package oomscore

import (
	"os"
	"strconv"
	"strings"
)

// ChildBonus is how much more the processes the agent starts are worth to
// the OOM killer than the agent itself.
const ChildBonus = 100

// Prefer sets the new process pid's oom_score_adj to the agent's own plus
// ChildBonus (at least ChildBonus, at most 1000; raising it needs no
// privilege). Best effort, and done right after the process has started:
// what it forks in its first microseconds may keep the agent's score; its
// later descendants inherit the new one.
func Prefer(pid int) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return
	}
	own, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || own >= 1000 {
		return
	}
	adj := min(1000, max(own, 0)+ChildBonus)
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(adj)), 0)
}
