package output

import (
	"fmt"
	"strings"

	appaudit "github.com/tfmirror/tfmirror/internal/app/audit"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/mirror"
)

// auditEvent is an "audit" event: one package's known vulnerabilities.
type auditEvent struct {
	Status     string         `json:"status"`
	Provider   string         `json:"provider"`
	Version    string         `json:"version"`
	Platform   string         `json:"platform"`
	Advisories []advisoryJSON `json:"advisories,omitempty"`
	// Acted are the ids of the advisories the policy acts on.
	Acted   []string `json:"acted,omitempty"`
	Message string   `json:"message,omitempty"`
}

// AuditPackage reports one package of an audit: in JSON every package;
// for people a row for each advisory, and one for a package without an
// SBOM or whose SBOM is bad (the clean ones are counted in the summary).
func (p *Printer) AuditPackage(r appaudit.Package) {
	if p.opts.JSON {
		p.emit("audit", auditEvent{
			Status: string(r.Status), Provider: r.Provider.String(), Version: r.Version.String(), Platform: r.Platform.String(),
			Advisories: advisoriesJSON(r.Advisories), Acted: mirror.AdvisoryIDs(r.Acted), Message: r.Problem,
		})
		return
	}
	switch r.Status {
	case appaudit.StatusClean, appaudit.StatusNoBuild:
		return
	case appaudit.StatusNoSBOM:
		p.Line(auditRow("no SBOM", r.Package, "-", "", "", ""))
	case appaudit.StatusBadSBOM:
		p.say(auditRow("bad SBOM", r.Package, r.Problem, "", "", ""))
	}
	for _, a := range r.Advisories {
		what := "allowed"
		if containsAdvisory(r.Acted, a.ID) {
			what = "VULNERABLE"
		}
		p.say(auditRow(what, r.Package, a.ID, a.Module, a.Found, cmpOr(a.Fixed, "none")))
	}
}

func auditRow(what string, pkg mirror.Package, advisory, module, found, fixed string) string {
	return strings.TrimRight(fmt.Sprintf("%-10s %s %s %-13s %-20s %s %s %s", what, pkg.Provider, pkg.Version, pkg.Platform, advisory, module, found, fixedNote(fixed)), " ")
}

func fixedNote(fixed string) string {
	if fixed == "" {
		return ""
	}
	return "(fixed: " + fixed + ")"
}

func containsAdvisory(advs []mirror.Advisory, id string) bool {
	for _, a := range advs {
		if a.ID == id {
			return true
		}
	}
	return false
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// auditedJSON counts an audit's packages by outcome.
type auditedJSON struct {
	Packages   int `json:"packages"`
	Clean      int `json:"clean"`
	Vulnerable int `json:"vulnerable"`
	Acted      int `json:"acted"`
	NoSBOM     int `json:"no_sbom"`
	NoBuild    int `json:"no_build_information"`
	BadSBOM    int `json:"bad_sbom"`
}

// AuditSummary closes an audit: its counts.
func (p *Printer) AuditSummary(r *appaudit.Report, err error) {
	c := auditedJSON{
		Packages: r.Packages, Clean: r.Counts[appaudit.StatusClean], Vulnerable: r.Counts[appaudit.StatusVulnerable], Acted: r.Acted,
		NoSBOM: r.Counts[appaudit.StatusNoSBOM], NoBuild: r.Counts[appaudit.StatusNoBuild], BadSBOM: r.Counts[appaudit.StatusBadSBOM],
	}
	if p.opts.JSON {
		p.Summary(struct {
			Destinations    []string            `json:"destinations"`
			Vulnerabilities vulnerabilitiesJSON `json:"vulnerabilities"`
			Audited         auditedJSON         `json:"audited"`
			Warnings        []string            `json:"warnings"`
		}{[]string{r.Location}, vulnerabilitiesJSON{Database: r.Database, Packages: c.Vulnerable, Advisories: r.Advisories}, c, nonNil(r.Warnings)}, err)
		return
	}
	for _, w := range r.Warnings {
		p.say("warning: " + w)
	}
	p.say(fmt.Sprintf("%s against %s: %s, %d with known vulnerabilities (%s; %d not allowed by the policy), %d clean, %d without build information, %d without SBOM, %d with a bad SBOM",
		r.Location, r.Database, plural.Count(c.Packages, "package"), c.Vulnerable, plural.Count(r.Advisories, "advisory"), c.Acted, c.Clean, c.NoBuild, c.NoSBOM, c.BadSBOM))
}
