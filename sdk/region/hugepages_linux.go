package region

import "golang.org/x/sys/unix"

func adviseHugePages(b []byte) error { return unix.Madvise(b, unix.MADV_HUGEPAGE) }
