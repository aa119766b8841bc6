//go:build !linux

package rpc

import (
	"os"
	"time"
)

// laneSupported: lanes need Linux's futexes; elsewhere every call is gRPC.
const laneSupported = false

func futexWait(*uint32, uint32, time.Duration) {}
func futexWake(*uint32)                        {}
func processAlive(int) bool                    { return true }
func currentPid() int                          { return os.Getpid() }
