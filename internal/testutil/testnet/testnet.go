// Package testnet holds what tests that start real servers need of the
// network: a free port on the loopback interface. Programs may import it
// as well as tests (internal/testutil/serverproc, which the benchmark's
// helper programs use, does): it imports no testing package.
package testnet

import "net"

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
