//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpu is the CPU time the process has used so far.
type cpu struct{ user, sys time.Duration }

func cpuTime() (cpu, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpu{}, err
	}
	return cpu{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}, nil
}
