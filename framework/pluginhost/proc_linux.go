package pluginhost

import "syscall"

// sysProcAttr starts a plugin in a process group of its own, so that it
// and whatever it forks are killed together (killGroup), and asks Linux
// to kill it when the thread that started it exits: the host dying, even
// by SIGKILL, takes the plugin with it. (Go never ends a thread that ran
// no LockOSThread'd goroutine, so the thread lives as long as the host.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
