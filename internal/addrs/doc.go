// Package addrs holds the small value types every other package shares:
// provider addresses (exactly OpenTofu's rules, via its registry-address
// library), platforms and versions.
//
// It owns parsing and printing of those values and nothing else: it does no
// I/O and knows nothing about registries, mirrors or configuration files.
package addrs
