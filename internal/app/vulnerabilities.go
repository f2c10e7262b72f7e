package app

import (
	"context"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/vulndb"
	"github.com/tfmirror/tfmirror/mirror"
)

// OpenAdvisor opens the settings' vulnerability database and returns the
// build's mirror.Advisor over it, and where the database is (for
// messages, no secret); nil and "" when no database is given.
func OpenAdvisor(ctx context.Context, s settings.Settings) (mirror.Advisor, string, error) {
	if s.VulnDB == "" {
		return nil, "", nil
	}
	db, err := endpoint.OpenVulnDB(ctx, s.VulnDB, s)
	if err != nil {
		return nil, "", err
	}
	return func(ctx context.Context, _ mirror.Package, prog hashing.Program) ([]mirror.Advisory, error) {
		if prog.Info == nil {
			return nil, nil // not a Go program
		}
		findings, err := db.Match(ctx, vulndb.ProgramOf(prog.Info))
		return Advisories(findings), err
	}, db.Location(), nil
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
