package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	appbuild "github.com/tfmirror/tfmirror/internal/app/build"
	"github.com/tfmirror/tfmirror/mirror"
)

// For people, a package with known vulnerabilities is printed even when
// quiet, each advisory on a line under it; a held package says why; the
// summary counts what was held back and found.
func TestBuildTextShowsAdvisories(t *testing.T) {
	pkg := func(plat string) mirror.Package {
		return mirror.Package{Provider: addrs.MustParseProvider("acme/probe"), Version: addrs.MustParseVersion("1.0.0"), Platform: addrs.MustParsePlatform(plat)}
	}
	adv := mirror.Advisory{ID: "GO-2022-1059", Module: "golang.org/x/text", Found: "v0.3.5", Fixed: "0.3.8"}
	results := []mirror.Result{
		{Package: pkg("linux_amd64"), Status: mirror.StatusMirrored, Bytes: 10, Advisories: []mirror.Advisory{adv}, Advised: true},
		{Package: pkg("darwin_arm64"), Status: mirror.StatusHeld, Reason: "vulnerabilities: linux_amd64 holds " + adv.String(), Advisories: []mirror.Advisory{adv}},
	}
	var out bytes.Buffer
	p := NewWith(&out, Options{Quiet: true})
	for _, r := range results {
		p.Event(mirror.Event{Result: &r})
	}
	p.BuildSummary(&appbuild.Report{Build: &mirror.Report{Results: results}, Destinations: []string{"site"}, VulnDB: "osv"}, nil)
	for _, want := range []string{
		"mirrored  registry.opentofu.org/acme/probe 1.0.0 linux_amd64 (10 B, signature not checked), known vulnerabilities:\n          GO-2022-1059 in golang.org/x/text v0.3.5 (fixed in 0.3.8)",
		"held      registry.opentofu.org/acme/probe 1.0.0 darwin_arm64: vulnerabilities: linux_amd64 holds GO-2022-1059",
		"1 mirrored, 0 already present, 0 skipped, 1 held back, 0 failed",
		"known vulnerabilities (osv): 1 advisory in 2 packages",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}
