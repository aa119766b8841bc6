package rpc

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// laneSupported: Linux has futexes on shared memory.
const laneSupported = true

// Futex operations on a word other processes map too (no
// FUTEX_PRIVATE_FLAG).
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// futexWait sleeps while *addr == val, at most d (or until woken).
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes the waiter on addr, if any.
func futexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, 1, 0, 0, 0)
}

// processAlive reports whether pid still runs (0: not known yet).
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

func currentPid() int { return os.Getpid() }
