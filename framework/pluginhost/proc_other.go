//go:build !linux

package pluginhost

import "syscall"

// sysProcAttr starts a plugin in a process group of its own, so that it
// and whatever it forks are killed together (killGroup). Without Linux's
// parent-death signal, a plugin notices its host's death by its parent id
// changing (sdk/internal/rpc).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
