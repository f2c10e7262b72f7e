// Package golden compares committed generated files (the command
// reference, the compatibility table) with what the code generates now,
// for tests that fail when the committed copy is stale.
package golden

import (
	"fmt"
	"strings"
)

// FirstDifference names the first line where the committed text and the
// generated one differ.
func FirstDifference(committed, generated string) string {
	a, b := strings.Split(committed, "\n"), strings.Split(generated, "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: committed %q, generated %q", i+1, x, y)
		}
	}
	return "same lines, different bytes"
}
