package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// replicaDirName is the directory of a tree the registry replica writes
// (internal/replica.Dir, which layout cannot import).
const replicaDirName = "replica"

// ownDirs lists the directories of a tree tfmirror writes files into, so
// the only ones searched for leftovers: the root, the private directory,
// the change records' directory, every directory of the replica and the
// provider directories. Nothing
// else is searched: an operator's own directories are not even listed
// beyond the two levels that hostnames and namespaces take.
func ownDirs(t *atomicfile.Root) ([]string, error) {
	dirs := []string{".", PrivateDirName}
	if info, err := t.Lstat(ChangesDir); err == nil && info.IsDir() {
		dirs = append(dirs, ChangesDir)
	}
	replica, err := replicaDirs(t)
	if err != nil {
		return nil, err
	}
	providers, err := providerDirs(t)
	if err != nil {
		return nil, err
	}
	return append(append(dirs, replica...), providers...), nil
}

// replicaDirs lists the replica's directories, without following a link.
func replicaDirs(t *atomicfile.Root) ([]string, error) {
	info, err := t.Lstat(replicaDirName)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !info.IsDir() {
		return nil, nil // none, or not tfmirror's
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	err = fs.WalkDir(t.FS(), replicaDirName, func(rel string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, rel)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find leftovers in %s: %w", t.Path(replicaDirName), err)
	}
	return dirs, nil
}

// providerDirs lists the provider directories of a tree: host/ns/type,
// real directories (not links) that hold a file tfmirror publishes there,
// or the temporary file of one (see isProviderDir). Their names are not
// parsed as an address: the host is the punycode form, which addrs does
// not parse back.
func providerDirs(t *atomicfile.Root) ([]string, error) {
	dirs := []string{"."}
	for range 3 { // host, namespace, type
		var below []string
		for _, dir := range dirs {
			subs, err := subdirs(t, dir)
			if err != nil {
				return nil, err
			}
			below = append(below, subs...)
		}
		dirs = below
	}
	var out []string
	for _, dir := range dirs {
		if ok, err := isProviderDir(t, dir); err != nil {
			return nil, err
		} else if ok {
			out = append(out, dir)
		}
	}
	return out, nil
}

// subdirs lists the real directories in dir (links left out) whose names
// can be part of a provider address: no dot files, not the replica.
func subdirs(t *atomicfile.Root, dir string) ([]string, error) {
	entries, err := t.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("find leftovers: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || dir == "." && name == replicaDirName {
			continue
		}
		out = append(out, path.Join(dir, name))
	}
	return out, nil
}

// isProviderDir reports whether dir, host/ns/type, is a provider directory
// tfmirror wrote: it holds index.json or a file named
// terraform-provider-TYPE_... (an archive or a kept origin file), or one
// of tfmirror's temporary files for them, which a build killed while
// publishing a new provider's first archive leaves alone in it.
func isProviderDir(t *atomicfile.Root, dir string) (bool, error) {
	entries, err := t.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("find leftovers: %w", err)
	}
	archives := "terraform-provider-" + path.Base(dir) + "_"
	for _, e := range entries {
		if e.Type().IsRegular() && isProviderFile(e.Name(), archives) {
			return true, nil
		}
	}
	return false, nil
}

// isProviderFile reports whether name is index.json, a file starting with
// archives (terraform-provider-TYPE_), or a temporary file of either.
func isProviderFile(name, archives string) bool {
	if tmp, ok := strings.CutPrefix(name, atomicfile.TempPrefix); ok {
		return strings.HasPrefix(tmp, "index.json-") || strings.HasPrefix(tmp, archives)
	}
	return name == "index.json" || strings.HasPrefix(name, archives)
}
