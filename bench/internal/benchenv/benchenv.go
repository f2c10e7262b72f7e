// Package benchenv is what the benchmark's helper servers (benchs3,
// benchoci) share: how they tell bench/run that they are ready and how to
// reach them.
package benchenv

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Write writes dir/name as KEY=value lines, atomically, so its presence
// means the server is ready. It may hold credentials: mode 0600.
func Write(dir, name string, info map[string]string) error {
	var env strings.Builder
	for _, k := range slices.Sorted(maps.Keys(info)) {
		fmt.Fprintf(&env, "%s=%s\n", k, info[k])
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(env.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}
