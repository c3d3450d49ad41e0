package process

import (
	"strconv"

	"golang.org/x/sys/unix"

	rpc "github.com/sbx-dev/sbx/api/proto/envd/process"
)

// endEvent turns a wait status into the end event envd sends: exit code (-1
// when killed by a signal), whether it exited, os.ProcessState.String() as
// status, and, like exec.ExitError, the status again as error unless the
// process exited with 0.
func endEvent(ws unix.WaitStatus) *rpc.ProcessEvent_EndEvent {
	end := &rpc.ProcessEvent_EndEvent{ExitCode: -1, Exited: ws.Exited(), Status: statusString(ws)}
	if ws.Exited() {
		end.ExitCode = int32(ws.ExitStatus())
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		msg := end.Status
		end.Error = &msg
	}
	return end
}

// statusString is os.ProcessState.String() for a wait status.
func statusString(ws unix.WaitStatus) string {
	var s string
	switch {
	case ws.Exited():
		s = "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s = "signal: " + ws.Signal().String()
	case ws.Stopped():
		s = "stop signal: " + ws.StopSignal().String()
	case ws.Continued():
		s = "continued"
	}
	if ws.CoreDump() {
		s += " (core dumped)"
	}
	return s
}
