// Package govulndb gives tests the real Go vulnerability database and
// govulncheck, both provided by scripts/test, and writes the layout
// vuln.go.dev serves from a directory of OSV records. Test use only.
package govulndb

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
)

// The database scripts/test provides: golang.org/x/vulndb at this
// version, whose data/osv holds 4,789 records.
const Version = "v0.0.0-20261105234957-e22db6528018"

// OSVDir returns the data/osv directory of the pinned database
// (TFMIRROR_VULNDB). Without it the test skips, or fails where every
// program must be there (serverproc.Required).
func OSVDir(t testing.TB) string {
	t.Helper()
	return provided(t, "TFMIRROR_VULNDB", "the Go vulnerability database's data/osv (golang.org/x/vulndb@"+Version+")")
}

// Govulncheck returns the govulncheck binary (TFMIRROR_GOVULNCHECK), as
// OSVDir does.
func Govulncheck(t testing.TB) string {
	t.Helper()
	return provided(t, "TFMIRROR_GOVULNCHECK", "govulncheck (golang.org/x/vuln/cmd/govulncheck)")
}

func provided(t testing.TB, key, what string) string {
	t.Helper()
	p := os.Getenv(key) //nolint:forbidigo // test support reads its own environment
	if p == "" {
		if serverproc.Required() {
			t.Fatalf("%s is not set: %s is required here; run ./scripts/test, which provides it", key, what)
		}
		t.Skipf("%s is not set (%s); ./scripts/test provides it", key, what)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return p
}

// record is the part of an OSV record the index needs.
type record struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []osvRange `json:"ranges"`
	} `json:"affected"`
}

type osvRange struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced"`
		Fixed      string `json:"fixed"`
	} `json:"events"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Fixed    string    `json:"fixed,omitempty"`
}

type moduleMeta struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

type vulnMeta struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
}

// WriteServed writes into dir the layout vuln.go.dev serves (its
// uncompressed endpoints: index/db.json, index/modules.json,
// index/vulns.json and ID/<id>.json, the record as it is) for the OSV
// records (*.json) in osvDir whose id keep accepts (nil: every one), as
// golang.org/x/vulndb's own writer and golang.org/x/vuln's client do.
func WriteServed(t testing.TB, osvDir, dir string, keep func(id string) bool) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(osvDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		latest  time.Time
		modules = map[string]*moduleMeta{}
		vulns   []vulnMeta
	)
	for _, p := range paths {
		data, r := read(t, p)
		if keep != nil && !keep(r.ID) {
			continue
		}
		write(t, filepath.Join(dir, "ID", r.ID+".json"), data)
		latest = later(latest, r.Modified)
		vulns = append(vulns, vulnMeta{ID: r.ID, Modified: r.Modified, Aliases: r.Aliases})
		for _, a := range r.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &moduleMeta{Path: a.Package.Name, Vulns: []moduleVuln{}}
				modules[a.Package.Name] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: r.ID, Modified: r.Modified, Fixed: latestFix(a.Ranges)})
		}
	}
	metas := make([]*moduleMeta, 0, len(modules))
	for _, m := range modules {
		metas = append(metas, m)
	}
	slices.SortFunc(metas, func(a, b *moduleMeta) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(vulns, func(a, b vulnMeta) int { return strings.Compare(a.ID, b.ID) })
	writeJSON(t, filepath.Join(dir, "index", "db.json"), map[string]time.Time{"modified": latest})
	writeJSON(t, filepath.Join(dir, "index", "modules.json"), metas)
	writeJSON(t, filepath.Join(dir, "index", "vulns.json"), vulns)
}

// latestFix is the module's latest fixed version, "" when the
// vulnerability was introduced again after it (x/vuln's
// NonSupersededFix).
func latestFix(ranges []osvRange) string {
	latest := ""
	less := func(a, b string) bool { return a == "" || semver.Compare("v"+a, "v"+b) < 0 }
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, e := range r.Events {
			if e.Fixed != "" && less(latest, e.Fixed) {
				latest = e.Fixed
			}
		}
		for _, e := range r.Events {
			if e.Introduced != "" && e.Introduced != "0" && less(latest, e.Introduced) {
				latest = ""
				break
			}
		}
	}
	return latest
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func read(t testing.TB, p string) ([]byte, record) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("govulndb: %s: %v", p, err)
	}
	if r.ID+".json" != filepath.Base(p) {
		t.Fatalf("govulndb: %s holds record %q", p, r.ID)
	}
	return data, r
}

func writeJSON(t testing.TB, p string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	write(t, p, data)
}

func write(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
