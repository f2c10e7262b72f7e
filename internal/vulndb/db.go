// Package vulndb reads the Go vulnerability database (OSV records: a
// directory such as golang.org/x/vulndb's data/osv, the layout
// vuln.go.dev serves, on disk or at an https URL, or an OSV zip) and
// matches the modules and Go version a program was built from against
// it, the standard library included. Offline, Load reads every record;
// online, Remote reads the index and then only the records the modules
// asked about may be affected by, through the httpx.Fetcher it is given.
//
// It matches at module level, as govulncheck -mode=binary does before it
// looks at symbols: a program that contains an affected version of a
// module is reported, whether or not it calls the vulnerable functions,
// unless every package the advisory names is limited to other platforms
// (GOOS, GOARCH) than the program's. govulncheck also reports which
// advisories' vulnerable functions a binary holds or calls; every
// advisory it reports for a binary is among the ones this package
// reports for the same modules, and the converse holds at module level
// (e2e TestVulnerabilitiesAgainstGovulncheck).
//
// It owns the records' parsing, their bounds and the version matching;
// it does not read SBOMs or programs (internal/sbom, hashing do) or
// decide what a finding means for a build (the policy does).
package vulndb

import (
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// Record is the part of an OSV record the matching uses.
type Record struct {
	ID        string     `json:"id"`
	Aliases   []string   `json:"aliases"`
	Summary   string     `json:"summary"`
	Withdrawn string     `json:"withdrawn"`
	Modified  time.Time  `json:"modified"`
	Affected  []Affected `json:"affected"`
}

// Affected is one module's affected versions.
type Affected struct {
	Package struct {
		Name      string `json:"name"`
		Ecosystem string `json:"ecosystem"`
	} `json:"package"`
	Ranges            []Range `json:"ranges"`
	EcosystemSpecific struct {
		Imports []Import `json:"imports"`
	} `json:"ecosystem_specific"`
}

// Import is a package of the module the advisory is about, and the
// platforms it is vulnerable on (none listed: every one).
type Import struct {
	Path   string   `json:"path"`
	GOOS   []string `json:"goos"`
	GOARCH []string `json:"goarch"`
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
	modified time.Time // the newest record's
	digest   string    // of the records read, by LoadFS
}

// Identity names a database's contents, for a record of what was matched
// against which database: the newest modified time of its records (zero
// when they do not say: golang.org/x/vulndb's data/osv leaves it to the
// publication), how many it holds, and the SHA-256 of what was read (the
// records, or a served database's index), which changes with any record.
type Identity struct {
	Modified time.Time
	Records  int
	SHA256   string // hex
}

// Identity names the loaded database.
func (db *DB) Identity() Identity {
	return Identity{Modified: db.modified, Records: db.records, SHA256: db.digest}
}

// Len is how many records the database holds.
func (db *DB) Len() int { return db.records }

// Module is a module version a program was built from.
type Module struct {
	Path, Version string
}

// Program is what a program was built from and for, as its build
// information says.
type Program struct {
	Modules   []Module // its dependencies (the main module is not matched)
	GoVersion string   // "go1.22.5"; "" for none
	// The platform it was built for; "" matches every platform.
	GOOS, GOARCH string
}

// ProgramOf reads a Program from Go build information: the modules (as
// replaced), the Go version and the GOOS and GOARCH build settings.
func ProgramOf(info *debug.BuildInfo) Program {
	p := Program{GoVersion: info.GoVersion}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		p.Modules = append(p.Modules, Module{Path: d.Path, Version: d.Version})
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS":
			p.GOOS = s.Value
		case "GOARCH":
			p.GOARCH = s.Value
		}
	}
	return p
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
	if r.Modified.After(db.modified) {
		db.modified = r.Modified
	}
	seen := map[string]bool{}
	for _, a := range r.Affected {
		if a.Package.Ecosystem != "Go" || seen[a.Package.Name] {
			continue
		}
		seen[a.Package.Name] = true
		db.byModule[a.Package.Name] = append(db.byModule[a.Package.Name], r)
	}
}

// Match returns the advisories that apply to the program's modules and
// Go version on its platform, sorted by module and advisory.
func (db *DB) Match(p Program) []Finding {
	var out []Finding
	if v := GoSemver(p.GoVersion); v != "" {
		out = append(out, db.matchModule(StdlibModule, v, p.GoVersion, p)...)
	}
	for _, m := range p.Modules {
		if semver.IsValid(m.Version) {
			out = append(out, db.matchModule(m.Path, m.Version, m.Version, p)...)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return strings.Compare(a.Module+"\x00"+a.ID, b.Module+"\x00"+b.ID)
	})
	return slices.CompactFunc(out, func(a, b Finding) bool { return a.Module == b.Module && a.ID == b.ID })
}

func (db *DB) matchModule(path, v, shown string, p Program) []Finding {
	var out []Finding
	for _, r := range db.byModule[path] {
		for _, a := range r.Affected {
			if a.Package.Name != path || a.Package.Ecosystem != "Go" || !a.onPlatform(p.GOOS, p.GOARCH) {
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

// onPlatform says whether one of the packages the advisory names is
// vulnerable on goos/goarch ("" for any), as govulncheck decides it: an
// advisory that names no package applies everywhere.
func (a Affected) onPlatform(goos, goarch string) bool {
	if len(a.EcosystemSpecific.Imports) == 0 {
		return true
	}
	for _, imp := range a.EcosystemSpecific.Imports {
		if matchesPlatform(goos, imp.GOOS) && matchesPlatform(goarch, imp.GOARCH) {
			return true
		}
	}
	return false
}

func matchesPlatform(v string, list []string) bool {
	return v == "" || len(list) == 0 || slices.Contains(list, v)
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
