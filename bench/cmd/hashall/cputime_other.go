//go:build !unix

package main

import (
	"errors"
	"time"
)

type cpu struct{ user, sys time.Duration }

func cpuTime() (cpu, error) { return cpu{}, errors.New("CPU time is measured on Unix only") }
