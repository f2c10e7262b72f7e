package output

import (
	"slices"

	"github.com/tfmirror/tfmirror/mirror"
)

// advisoryJSON is one known vulnerability of a package, in package and
// audit events.
type advisoryJSON struct {
	ID      string   `json:"id"`
	Aliases []string `json:"aliases,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Module  string   `json:"module"`
	Found   string   `json:"found"`
	Fixed   string   `json:"fixed,omitempty"`
}

func advisoriesJSON(advs []mirror.Advisory) []advisoryJSON {
	if len(advs) == 0 {
		return nil
	}
	out := make([]advisoryJSON, len(advs))
	for i, a := range advs {
		out[i] = advisoryJSON{ID: a.ID, Aliases: a.Aliases, Summary: a.Summary, Module: a.Module, Found: a.Found, Fixed: a.Fixed}
	}
	return out
}

// vulnerabilitiesJSON counts what a build or an audit found: the
// packages with known vulnerabilities and the distinct advisories.
type vulnerabilitiesJSON struct {
	Database   string `json:"database"`
	Packages   int    `json:"packages"`
	Advisories int    `json:"advisories"`
}

// advisoryLines are a package's advisories for people, one a line.
func advisoryLines(advs []mirror.Advisory) []string {
	out := make([]string, len(advs))
	for i, a := range advs {
		out[i] = "          " + a.String()
	}
	return out
}

// countAdvisories counts the packages with advisories and the distinct
// advisories among results.
func countAdvisories(results []mirror.Result) (packages, advisories int) {
	var ids []string
	for _, r := range results {
		if len(r.Advisories) > 0 {
			packages++
		}
		for _, a := range r.Advisories {
			ids = append(ids, a.ID)
		}
	}
	slices.Sort(ids)
	return packages, len(slices.Compact(ids))
}
