//go:build amd64 && !purego

package cpu

// prefetchRows is implemented in convert_amd64.s.
//
//go:noescape
func prefetchRows(base *byte, rows *int64, n int, rowBytes int)
