// Package vulndb reads the Go vulnerability database (OSV records: a
// directory such as golang.org/x/vulndb's data/osv, the layout
// vuln.go.dev serves, on disk or at an https URL, or an OSV zip) and
// matches the modules and Go version a program was built from against
// it, the standard library included. Offline, Load reads every record;
// online, Remote reads the index and then only the records the modules
// asked about may be affected by, through the httpx.Fetcher it is given.
//
// It matches at module level: a program that contains an affected
// version of a module is reported, whether or not it calls the
// vulnerable functions. govulncheck -mode=binary also knows which
// symbols a binary holds and reports only advisories whose symbols are
// present, so every advisory it reports for a binary is among the ones
// this package reports for the same modules; the converse does not hold.
//
// It owns the records' parsing, their bounds and the version matching;
// it does not read SBOMs or programs (internal/sbom, hashing do) or
// decide what a finding means for a build (the policy does).
package vulndb

import (
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// Record is the part of an OSV record the matching uses.
type Record struct {
	ID        string     `json:"id"`
	Aliases   []string   `json:"aliases"`
	Summary   string     `json:"summary"`
	Withdrawn string     `json:"withdrawn"`
	Affected  []Affected `json:"affected"`
}

// Affected is one module's affected versions.
type Affected struct {
	Package struct {
		Name      string `json:"name"`
		Ecosystem string `json:"ecosystem"`
	} `json:"package"`
	Ranges []Range `json:"ranges"`
}

// Range is a SEMVER range of OSV: events in order, each introducing or
// fixing the vulnerability from a version on.
type Range struct {
	Type   string  `json:"type"`
	Events []Event `json:"events"`
}

// Event is one bound of a Range.
type Event struct {
	Introduced string `json:"introduced,omitempty"`
	Fixed      string `json:"fixed,omitempty"`
}

// DB is a loaded database, indexed by module path.
type DB struct {
	byModule map[string][]*Record
	records  int
}

// Len is how many records the database holds.
func (db *DB) Len() int { return db.records }

// Module is a module version a program was built from.
type Module struct {
	Path, Version string
}

// Finding is one advisory that applies to a module version.
type Finding struct {
	ID      string   `json:"id"`
	Aliases []string `json:"aliases,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Module  string   `json:"module"`
	Found   string   `json:"found"`
	Fixed   string   `json:"fixed,omitempty"` // "" when no release fixes it
}

// StdlibModule is the module path the database gives the standard
// library.
const StdlibModule = "stdlib"

func newDB() *DB { return &DB{byModule: map[string][]*Record{}} }

func (db *DB) add(r *Record) {
	if r.Withdrawn != "" || r.ID == "" {
		return
	}
	db.records++
	seen := map[string]bool{}
	for _, a := range r.Affected {
		if a.Package.Ecosystem != "Go" || seen[a.Package.Name] {
			continue
		}
		seen[a.Package.Name] = true
		db.byModule[a.Package.Name] = append(db.byModule[a.Package.Name], r)
	}
}

// Match returns the advisories that apply to the modules and the Go
// version (as build information gives it, "go1.22.5"; "" for none),
// sorted by module and advisory.
func (db *DB) Match(mods []Module, goVersion string) []Finding {
	var out []Finding
	if v := GoSemver(goVersion); v != "" {
		out = append(out, db.matchModule(StdlibModule, v, goVersion)...)
	}
	for _, m := range mods {
		if semver.IsValid(m.Version) {
			out = append(out, db.matchModule(m.Path, m.Version, m.Version)...)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return strings.Compare(a.Module+"\x00"+a.ID, b.Module+"\x00"+b.ID)
	})
	return slices.CompactFunc(out, func(a, b Finding) bool { return a.Module == b.Module && a.ID == b.ID })
}

func (db *DB) matchModule(path, v, shown string) []Finding {
	var out []Finding
	for _, r := range db.byModule[path] {
		for _, a := range r.Affected {
			if a.Package.Name != path || a.Package.Ecosystem != "Go" {
				continue
			}
			if hit, fixed := affects(a.Ranges, v); hit {
				out = append(out, Finding{ID: r.ID, Aliases: r.Aliases, Summary: r.Summary, Module: path, Found: shown, Fixed: fixed})
				break
			}
		}
	}
	return out
}

// affects says whether version v (semver with its "v") is in one of the
// ranges, and the version that fixes it there.
func affects(ranges []Range, v string) (bool, string) {
	if len(ranges) == 0 {
		return true, "" // every version
	}
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		if hit, fixed := inRange(r.Events, v); hit {
			return true, fixed
		}
	}
	return false, ""
}

// inRange walks the events from the lowest version up: v is affected
// when the last event at or below it introduced the vulnerability, and
// the next event above it, if it fixes it, names the fix.
func inRange(events []Event, v string) (bool, string) {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b Event) int { return semver.Compare(a.version(), b.version()) })
	hit := false
	for _, e := range sorted {
		if semver.Compare(e.version(), v) > 0 {
			if hit && e.Fixed != "" {
				return true, e.Fixed
			}
			break
		}
		hit = e.Introduced != ""
	}
	return hit, ""
}

// version is the event's version as semver; introduced "0" is below
// every version.
func (e Event) version() string {
	switch {
	case e.Introduced == "0":
		return "v0.0.0-0"
	case e.Introduced != "":
		return "v" + e.Introduced
	}
	return "v" + e.Fixed
}

// GoSemver turns a Go version as build information gives it (go1.22,
// go1.22.5, go1.23rc1, with or without experiments after a space) into
// semver; "" for a development toolchain or anything else.
func GoSemver(goVersion string) string {
	fields := strings.Fields(goVersion)
	if len(fields) == 0 {
		return ""
	}
	v, ok := strings.CutPrefix(fields[0], "go")
	if !ok {
		return ""
	}
	pre := ""
	for _, tag := range []string{"rc", "beta", "alpha"} {
		if i := strings.Index(v, tag); i > 0 {
			v, pre = v[:i], "-"+tag+"."+v[i+len(tag):]
			break
		}
	}
	if strings.Count(v, ".") == 1 {
		v += ".0"
	}
	s := "v" + v + pre
	if !semver.IsValid(s) {
		return ""
	}
	return s
}
