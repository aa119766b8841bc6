//go:build !linux

package region

import "errors"

func adviseHugePages([]byte) error { return errors.ErrUnsupported }
