package app

import (
	"context"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/vulndb"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// VulnDB is the settings' vulnerability database as a build uses it: to
// match what it downloads (Advisor) and what it keeps (KeptAdvisor).
type VulnDB struct {
	db vulndb.Matcher
}

// OpenVulnDB opens the settings' vulnerability database; nil when none is
// given.
func OpenVulnDB(ctx context.Context, s settings.Settings) (*VulnDB, error) {
	if s.VulnDB == "" {
		return nil, nil
	}
	db, err := endpoint.OpenVulnDB(ctx, s.VulnDB, s)
	if err != nil {
		return nil, err
	}
	return &VulnDB{db: db}, nil
}

// Location is where the database is, for messages (no secret); "" for
// none.
func (d *VulnDB) Location() string {
	if d == nil {
		return ""
	}
	return d.db.Location()
}

// Database names the database's contents, as vulnerabilities.json
// records it.
func (d *VulnDB) Database() layout.VulnDatabase {
	id := d.db.Identity()
	return layout.VulnDatabase{Modified: id.Modified.UTC(), Records: id.Records, SHA256: id.SHA256}
}

// Advisor is the build's mirror.Advisor: the build information of what it
// downloads, matched. Nil without a database.
func (d *VulnDB) Advisor() mirror.Advisor {
	if d == nil {
		return nil
	}
	return func(ctx context.Context, _ mirror.Package, prog hashing.Program) ([]mirror.Advisory, error) {
		if prog.Info == nil {
			return nil, nil // not a Go program
		}
		findings, err := d.db.Match(ctx, vulndb.ProgramOf(prog.Info))
		return Advisories(findings), err
	}
}

// KeptAdvisor is the build's mirror.KeptAdvisor: the SBOMs m (the first
// destination) holds of the packages it keeps, matched as tfmirror audit
// matches them (MatchSBOMs). Nil without a database.
func (d *VulnDB) KeptAdvisor(m mirror.Packages) mirror.KeptAdvisor {
	if d == nil {
		return nil
	}
	return func(ctx context.Context, p addrs.Provider, v addrs.Version, plats []addrs.Platform) ([]mirror.KeptAdvice, error) {
		found, err := MatchSBOMs(ctx, m, d.db, p, v, plats)
		if err != nil {
			return nil, err
		}
		out := make([]mirror.KeptAdvice, len(found))
		for i, f := range found {
			out[i] = mirror.KeptAdvice{Platform: f.Platform, Advised: f.Matched(), Advisories: f.Advisories, Problem: f.Problem}
		}
		return out, nil
	}
}

// Advisories are a database's findings as the core reports them.
func Advisories(findings []vulndb.Finding) []mirror.Advisory {
	if len(findings) == 0 {
		return nil
	}
	out := make([]mirror.Advisory, len(findings))
	for i, f := range findings {
		out[i] = mirror.Advisory{ID: f.ID, Aliases: f.Aliases, Summary: f.Summary, Module: f.Module, Found: f.Found, Fixed: f.Fixed}
	}
	return out
}

// AdvisoryPolicy is the settings' vulnerabilities policy, or the zero
// policy (warn) when the manifest has none.
func AdvisoryPolicy(s settings.Settings) mirror.AdvisoryPolicy {
	if s.Advisories == nil {
		return mirror.AdvisoryPolicy{}
	}
	return *s.Advisories
}
