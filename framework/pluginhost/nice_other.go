//go:build !linux

package pluginhost

import "syscall"

// renice sets process pid to niceness n (a niceness belongs to the
// process outside Linux).
func renice(pid, n int) error {
	return syscall.Setpriority(syscall.PRIO_PROCESS, pid, n)
}
