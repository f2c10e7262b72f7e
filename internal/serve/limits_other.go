//go:build !unix

package serve

// defaultMaxConns is 1024 where the descriptor limit is not known.
func defaultMaxConns() int { return 1024 }
