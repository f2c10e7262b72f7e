package output

import (
	"fmt"
	"strings"

	appcheck "github.com/tfmirror/tfmirror/internal/app/check"
	"github.com/tfmirror/tfmirror/internal/plural"
)

// Check reports a manifest that passed tfmirror check: its warnings, then
// one line saying what it asks for.
func (p *Printer) Check(r *appcheck.Report) {
	p.Warnings(r.Warnings)
	platforms := "none"
	if len(r.Platforms) > 0 {
		names := make([]string, len(r.Platforms))
		for i, pl := range r.Platforms {
			names[i] = pl.String()
		}
		platforms = strings.Join(names, ", ")
	}
	p.Line(fmt.Sprintf("%s: %s, %s, %s; platforms %s; destinations %s",
		r.Manifest, plural.Count(r.Providers, "provider"), plural.Count(r.Modules, "module"),
		plural.Count(r.Configurations, "configuration"), platforms, strings.Join(r.Destinations, ", ")))
}
