package tfconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// manifestPath is where "tofu init" records the modules it installed,
// relative to the root module directory.
var manifestPath = filepath.Join(".terraform", "modules", "modules.json")

// manifestRecord is one entry of .terraform/modules/modules.json. Key is the
// dotted path of module call names from the root ("" for the root itself);
// Dir is relative to the root module directory unless absolute.
type manifestRecord struct {
	Key     string `json:"Key"`
	Source  string `json:"Source"`
	Version string `json:"Version,omitempty"`
	Dir     string `json:"Dir"`
}

// manifestRecord returns the manifest entry for a module key, reading the
// manifest on first use. A missing manifest is an empty one.
func (l *loader) manifestRecord(key string) (manifestRecord, bool) {
	if !l.readMf {
		l.readMf = true
		m, err := readManifest(filepath.Join(l.root, manifestPath))
		if err != nil {
			l.problems = append(l.problems, Problem{
				File:    l.displayPath(filepath.Join(l.root, manifestPath)),
				Summary: "Failed to read modules manifest file",
				Detail:  err.Error(),
			})
		}
		l.manifest = m
	}
	rec, ok := l.manifest[key]
	if ok {
		rec.Dir = filepath.FromSlash(rec.Dir)
	}
	return rec, ok
}

func readManifest(path string) (map[string]manifestRecord, error) {
	src, err := hclsafe.ReadFile(path, hclsafe.MaxConfigSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.New(errText(err))
	}
	if len(src) == 0 {
		return nil, nil
	}
	var file struct {
		Modules []manifestRecord `json:"Modules"`
	}
	if err := json.Unmarshal(src, &file); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	m := make(map[string]manifestRecord, len(file.Modules))
	for _, rec := range file.Modules {
		if _, dup := m[rec.Key]; dup {
			return nil, fmt.Errorf("two records for module %q", rec.Key)
		}
		m[rec.Key] = rec
	}
	return m, nil
}

// staleRecord says how a remote module call no longer matches what "tofu
// init" installed for it, as OpenTofu checks before it loads an installed
// module ("Module source has changed", "Module version requirements have
// changed"), or "" when it matches or cannot be told: a source whose
// recorded form go-getter's detectors decide is taken as it is.
func staleRecord(rec manifestRecord, c *callDecl) string {
	if !c.static {
		return ""
	}
	if same, ok := addrs.SameRecordedModuleSource(c.source, rec.Source); ok && !same {
		return fmt.Sprintf("its source has changed since \"tofu init\" installed it from %q", rec.Source)
	}
	if c.version == nil {
		return ""
	}
	cons, err := addrs.ParseModuleConstraint(c.version.text)
	switch {
	case err != nil:
		return "" // reported where the call was decoded
	case rec.Version == "":
		return "it has a version constraint, but \"tofu init\" installed it without a version"
	case !cons.Holds(rec.Version):
		return fmt.Sprintf("it asks for %q, but \"tofu init\" installed version %s", c.version.text, rec.Version)
	}
	return ""
}
