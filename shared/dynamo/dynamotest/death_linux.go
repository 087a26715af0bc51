package dynamotest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the emulator die with the test binary that started it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
