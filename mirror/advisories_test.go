package mirror

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// darwinAdvisor finds GO-2022-1059 in the darwin_arm64 package of 1.0.0,
// and nothing anywhere else.
func darwinAdvisor(_ context.Context, pkg Package, _ hashing.Program) ([]Advisory, error) {
	if pkg.Version.String() != "1.0.0" || pkg.Platform.String() != "darwin_arm64" {
		return nil, nil
	}
	return []Advisory{{ID: "GO-2022-1059", Aliases: []string{"CVE-2022-32149"}, Module: "golang.org/x/text", Found: "v0.3.7", Fixed: "v0.3.8"}}, nil
}

func action(a AdvisoryAction) *AdvisoryAction { return &a }

// The vulnerabilities policy: warn publishes and reports; hold keeps the
// whole release out (its other platform too), reported as held back,
// with no error; refuse fails it naming the platform, advisory and
// module; an ignored advisory does neither. Nothing of a release kept out
// is in the tree, not even an archive put ahead into it (a bucket), and
// the next release is published.
func TestVulnerabilitiesPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy AdvisoryPolicy
		want   Status
	}{
		{"warn", AdvisoryPolicy{}, StatusMirrored},
		{"hold", AdvisoryPolicy{Default: AdvisoryRule{Action: action(AdvisoryHold)}}, StatusHeld},
		{"refuse for the namespace", AdvisoryPolicy{Rules: []AdvisoryRule{{Hostname: addrs.DefaultRegistryHost, Namespace: "hashicorp", Type: "*", Action: action(AdvisoryRefuse)}}}, StatusFailed},
		{"hold, ignored by alias", AdvisoryPolicy{Default: AdvisoryRule{Action: action(AdvisoryHold), Ignore: map[string]string{"CVE-2022-32149": "not reachable"}}}, StatusMirrored},
		{"refuse for another provider", AdvisoryPolicy{Rules: []AdvisoryRule{{Hostname: addrs.DefaultRegistryHost, Namespace: "hashicorp", Type: "bar", Action: action(AdvisoryRefuse)}}}, StatusMirrored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
			h.src.add("hashicorp/foo", "1.1.0", "linux_amd64", "darwin_arm64")
			dir, err := layout.Open(h.root)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			var warnings []string
			b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{layout.NewTree(remoteStore{dir.Store}).Destination()}, Work: dir.Workspace,
				Options: Options{Advise: darwinAdvisor, Advisories: tc.policy, OnEvent: func(e Event) {
					if e.Warning != "" {
						warnings = append(warnings, e.Warning)
					}
				}}}
			r := b.Build(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")})
			for _, res := range r.Results {
				want := StatusMirrored
				if res.Version.String() == "1.0.0" {
					want = tc.want
				}
				if res.Status != want {
					t.Errorf("%s: %s (%v), want %s", res.Package, res.Status, res.Err, want)
				}
				if got := len(res.Advisories); got != map[bool]int{true: 1}[res.String() == "registry.opentofu.org/hashicorp/foo 1.0.0 darwin_arm64"] {
					t.Errorf("%s: %d advisories %v", res.Package, got, res.Advisories)
				}
			}
			published := h.exists(fooDir + "1.0.0.json")
			archives, _ := filepath.Glob(filepath.Join(h.root, fooDir, "*1.0.0*"))
			if tc.want == StatusMirrored != published || (tc.want != StatusMirrored && len(archives) > 0) {
				t.Errorf("1.0.0 published %v, its files in the tree %v", published, archives)
			}
			if !h.exists(fooDir + "1.1.0.json") {
				t.Error("1.1.0, which has no advisory, was not published")
			}
			err = r.Err()
			switch tc.want {
			case StatusFailed:
				var verr *VerificationError
				if !errors.As(err, &verr) || !strings.Contains(err.Error(), "hashicorp/foo 1.0.0 linux_amd64") ||
					!strings.Contains(err.Error(), "darwin_arm64 holds GO-2022-1059 in golang.org/x/text v0.3.7 (fixed in v0.3.8)") {
					t.Errorf("refused with %v", err)
				}
			case StatusHeld:
				if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "hashicorp/foo 1.0.0 is held back by the vulnerabilities policy (hold): darwin_arm64 holds GO-2022-1059") {
					t.Errorf("held back with error %v, warnings %q", err, warnings)
				}
			default:
				if err != nil {
					t.Error(err)
				}
			}
			if left, _ := os.ReadDir(filepath.Join(h.root, layout.StagingDirName)); len(left) > 0 {
				t.Errorf("staged files left: %v", left)
			}
		})
	}
}
