package pluginhost

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/flowrun/flowrun/sdk/region"
)

// HostEnv is the variable the host sets in every plugin's environment: the
// host's region.Owner. Whatever a plugin forks inherits it, so a process
// still carrying it after its host died is something a dead run left
// running — a plugin's child that escaped the parent-death signal (which
// reaches only the plugin itself) and the group kill (which never ran,
// the host having been killed with SIGKILL). The next host to start kills
// those (sweepOrphans).
const HostEnv = "FLOWRUN_PLUGIN_HOST"

// hostEnv is the environment entry a plugin of this host gets.
func hostEnv() string { return HostEnv + "=" + region.Owner() }

// sweepOrphans kills every process this user may signal whose environment
// names a host that no longer runs, and returns how many it killed. Where
// there is no procfs it does nothing. A process whose environment cannot
// be read (another user's) is not ours and is left alone.
func sweepOrphans() int {
	environs, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	killed := 0
	for _, path := range environs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		owner, ok := envValue(data, HostEnv)
		if !ok || !region.OwnerGone(owner) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// envValue finds key's first value in a /proc/PID/environ block (entries
// separated by NUL bytes).
func envValue(environ []byte, key string) (string, bool) {
	prefix := []byte(key + "=")
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}
