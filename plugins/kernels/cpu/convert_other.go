//go:build !amd64 || purego

package cpu

// prefetchRows is a hint; without the assembly there is none.
func prefetchRows(base *byte, rows *int64, n int, rowBytes int) {}
