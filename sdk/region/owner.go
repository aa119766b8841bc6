package region

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A region's name records its creator as PID or PID.START, START being the
// process's start time (ticks since boot, /proc/PID/stat field 22; Linux
// only). The sweep takes a region's creator for alive only if a process
// with that PID runs, is not a zombie, and, when the name records START,
// started at START: a PID the kernel has since given to another process
// does not keep a dead run's regions.

// owner is how this process signs the regions it creates: "PID" or
// "PID.START".
var owner = sync.OnceValue(func() string {
	pid := os.Getpid()
	if st, ok := procStat(pid); ok {
		return strconv.Itoa(pid) + "." + strconv.FormatUint(st.start, 10)
	}
	return strconv.Itoa(pid)
})

// creator is the process named in a region's name.
type creator struct {
	pid int
	// start is the creator's start time; 0 when the name does not record
	// it (a name made off Linux or by an older flowrun).
	start uint64
}

// Owner is how this process signs what it leaves behind: "PID.START" on
// Linux, "PID" elsewhere. Regions carry it in their names; the plugin host
// gives it to the plugins it starts (and so to whatever they fork), so a
// later run can tell what a dead host left running (OwnerGone).
func Owner() string { return owner() }

// OwnerGone reports whether the process an Owner string names no longer
// runs (by the same rules as the region sweep). A string that is not an
// Owner is not gone: nothing is removed on a guess.
func OwnerGone(s string) bool {
	c, ok := parseOwner(s)
	return ok && !c.alive()
}

// parseCreator reads the creator from a region's file name.
func parseCreator(name string) (creator, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return creator{}, false
	}
	who, _, ok := strings.Cut(rest, "-")
	if !ok {
		return creator{}, false
	}
	return parseOwner(who)
}

// parseOwner reads "PID" or "PID.START".
func parseOwner(who string) (creator, bool) {
	pidStr, startStr, hasStart := strings.Cut(who, ".")
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return creator{}, false
	}
	c := creator{pid: pid}
	if hasStart {
		if c.start, err = strconv.ParseUint(startStr, 10, 64); err != nil {
			return creator{}, false
		}
	}
	return c, true
}

// procState is what the sweep reads from /proc/PID/stat.
type procState struct {
	state byte   // R, S, D, Z, X, ...
	start uint64 // start time in clock ticks since boot
}

// procStat reads /proc/PID/stat; ok is false where there is no procfs or
// no such process.
func procStat(pid int) (procState, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procState{}, false
	}
	return parseStat(string(data))
}

// parseStat parses the line of /proc/PID/stat. The command name (field 2)
// is in parentheses and may itself contain spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStat(line string) (procState, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return procState{}, false
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return procState{}, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procState{}, false
	}
	return procState{state: f[0][0], start: start}, true
}

// alive reports whether the region's creator still runs. Where procfs
// answers it decides: a zombie (Z) or dead (X) process is not alive, nor
// one whose start time differs from the recorded one. Elsewhere a signal
// 0 says whether the PID exists.
func (c creator) alive() bool {
	return c.aliveWith(procStat)
}

func (c creator) aliveWith(stat func(pid int) (procState, bool)) bool {
	if st, ok := stat(c.pid); ok {
		if st.state == 'Z' || st.state == 'X' {
			return false
		}
		return c.start == 0 || st.start == c.start
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return false // procfs is there and has no such process
	}
	err := syscall.Kill(c.pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
