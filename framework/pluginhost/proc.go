package pluginhost

import (
	"errors"
	"syscall"
)

// killGroup sends SIGKILL to the process group pid leads: a plugin and
// every process it forked that did not leave the group. A group already
// gone is not an error.
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
