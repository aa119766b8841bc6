package plugin

import "runtime"

// Parallelism is how many goroutines a plugin's data-parallel work (a
// kernel's tables, a model's matrix products) uses when its options leave
// the count at 0: the CPUs this process may run on (its affinity mask), at
// most GOMAXPROCS. It is not GOMAXPROCS alone because a host may raise
// GOMAXPROCS above the core count (flowrun run once gave every stage a P
// of its own); splitting one product that many ways on fewer cores only
// adds fork-join waits for goroutines the cores cannot run.
func Parallelism() int {
	return max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))
}
