//go:build unix

package serve

import "syscall"

// defaultMaxConns is half the descriptors the process may open, less a
// reserve for the listener, standard streams and the runtime, within
// [16, 1024].
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<20 {
		return 1024
	}
	return min(max((int(rl.Cur)-32)/2, 16), 1024)
}
