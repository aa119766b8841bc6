package pluginhost

import (
	"os"
	"strconv"
	"syscall"
)

// renice sets every thread of process pid to niceness n. On Linux a
// niceness belongs to a thread (setpriority with a thread id), so each
// one in /proc/PID/task is set; the list is read again until a pass finds
// no thread it had not set, since one could be starting meanwhile (a
// thread started after that inherits n from the thread that starts it).
func renice(pid, n int) error {
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil && err != syscall.ESRCH {
				return err
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}
