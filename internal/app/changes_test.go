package app

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// TestBuildChanges: what a build's report says becomes its change record,
// each outcome in its place: published platforms under their version,
// advisories of what was published or held, a re-release once per
// release, a verification failure as refused (a download that failed
// changes nothing), key changes (not first releases), cool-down holds.
func TestBuildChanges(t *testing.T) {
	p := addrs.MustParseProvider("hashicorp/foo")
	pkg := func(v, plat string) mirror.Package {
		return mirror.Package{Provider: p, Version: addrs.MustParseVersion(v), Platform: addrs.MustParsePlatform(plat)}
	}
	rerelease := &mirror.RereleaseError{Package: mirror.Package{Provider: p, Version: addrs.MustParseVersion("0.9.0")}, Differences: []string{"a.zip: other bytes"}}
	rep := &mirror.Report{
		Results: []mirror.Result{
			{Package: pkg("1.0.0", "linux_amd64"), Status: mirror.StatusMirrored, Advised: true, Advisories: []mirror.Advisory{{ID: "GO-2026-0002"}, {ID: "GO-2026-0001"}}},
			{Package: pkg("1.0.0", "darwin_arm64"), Status: mirror.StatusMirrored},
			{Package: pkg("0.8.0", "linux_amd64"), Status: mirror.StatusPresent, Advised: true, Advisories: []mirror.Advisory{{ID: "GO-2026-0003"}}},
			{Package: pkg("0.9.0", "linux_amd64"), Status: mirror.StatusFailed, Err: &mirror.VerificationError{Package: pkg("0.9.0", "linux_amd64"), Problem: "re-released at the origin", Err: rerelease}},
			{Package: pkg("0.9.0", "darwin_arm64"), Status: mirror.StatusFailed, Err: &mirror.VerificationError{Package: pkg("0.9.0", "darwin_arm64"), Problem: "re-released at the origin", Err: rerelease}},
			{Package: pkg("1.1.0", "linux_amd64"), Status: mirror.StatusFailed, Err: &mirror.VerificationError{Package: pkg("1.1.0", "linux_amd64"), Problem: "checksum mismatch"}},
			{Package: pkg("1.2.0", "linux_amd64"), Status: mirror.StatusFailed, Err: &mirror.PackageError{Package: pkg("1.2.0", "linux_amd64"), Err: errors.New("connection reset")}},
		},
		Modules: []mirror.ModuleResult{
			{Module: addrs.MustParseModule("acme/net/aws"), Version: addrs.MustParseVersion("2.0.0"), Status: mirror.StatusMirrored},
			{Module: addrs.MustParseModule("acme/db/aws"), Version: addrs.MustParseVersion("1.0.0"), Status: mirror.StatusFailed, Err: fmt.Errorf("tag v1.0.0: %w", mirror.ErrUpstreamMoved)},
		},
		Keys: []mirror.KeyContinuity{
			{Package: mirror.Package{Provider: p, Version: addrs.MustParseVersion("0.1.0")}, Status: mirror.KeyFirst, Signer: mirror.Signer{KeyID: "A"}},
			{Package: mirror.Package{Provider: p, Version: addrs.MustParseVersion("1.0.0")}, Status: mirror.KeyChanged, Signer: mirror.Signer{KeyID: "B", Fingerprint: "BB"},
				Previous: &mirror.SignedRelease{Version: addrs.MustParseVersion("0.8.0"), Signer: mirror.Signer{KeyID: "A", Fingerprint: "AA"}}},
		},
	}
	until := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	holds := []mirror.Hold{{What: p.String(), Version: addrs.MustParseVersion("2.0.0"), FirstSeen: until.Add(-time.Hour), Until: until, New: true}}
	rec := BuildChanges(rep, holds)

	if len(rec.Added) != 2 || rec.Added[0].Version != "1.0.0" || !slices.Equal(rec.Added[0].Platforms, []string{"linux_amd64", "darwin_arm64"}) ||
		rec.Added[1].Package != "module registry.opentofu.org/acme/net/aws" {
		t.Errorf("added: %+v", rec.Added)
	}
	if len(rec.Advisories) != 1 || rec.Advisories[0].Package != p.String()+" 1.0.0 linux_amd64" || len(rec.Advisories[0].IDs) != 2 {
		t.Errorf("advisories: %+v", rec.Advisories)
	}
	if len(rec.Rereleases) != 2 || rec.Rereleases[0].Package != p.String()+" 0.9.0" || rec.Rereleases[1].Package != "module registry.opentofu.org/acme/db/aws 1.0.0" {
		t.Errorf("re-releases: %+v", rec.Rereleases)
	}
	if len(rec.Refused) != 1 || rec.Refused[0].Package != p.String()+" 1.1.0 linux_amd64" {
		t.Errorf("refused: %+v", rec.Refused)
	}
	want := layout.KeyChange{Package: p.String() + " 1.0.0", Status: "changed", KeyID: "B", Fingerprint: "BB", PreviousVersion: "0.8.0", PreviousKeyID: "A", PreviousFingerprint: "AA"}
	if len(rec.KeyChanges) != 1 || rec.KeyChanges[0] != want {
		t.Errorf("key changes: %+v", rec.KeyChanges)
	}
	if len(rec.Held) != 1 || !rec.Held[0].Until.Equal(until) || !rec.Held[0].New || !rec.Changed() {
		t.Errorf("held: %+v", rec.Held)
	}

	// A build where everything was present changes nothing.
	if BuildChanges(&mirror.Report{Results: []mirror.Result{{Package: pkg("1.0.0", "linux_amd64"), Status: mirror.StatusPresent}}}, nil).Changed() {
		t.Error("a no-op build's record says something changed")
	}
}
