package mirror

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Advisory is a known vulnerability of a module (or the Go standard
// library, "stdlib") a package's executable was built from.
type Advisory struct {
	ID      string   // GO-2022-1059
	Aliases []string // CVE-..., GHSA-...
	Summary string
	Module  string // the module path, "stdlib" for the standard library
	Found   string // the version the package holds
	Fixed   string // the first version that fixes it; "" when none does
}

// AdvisoryIDs are the distinct ids of advs, sorted: an advisory that
// affects several modules of one executable is one finding per module, and
// one id.
func AdvisoryIDs(advs []Advisory) []string {
	if len(advs) == 0 {
		return nil
	}
	out := make([]string, len(advs))
	for i, a := range advs {
		out[i] = a.ID
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (a Advisory) String() string {
	s := fmt.Sprintf("%s in %s %s", a.ID, a.Module, a.Found)
	if a.Fixed != "" {
		s += " (fixed in " + a.Fixed + ")"
	}
	return s
}

// Advisor returns the known advisories of a package from what its
// executable says it was built from (prog; prog.Info is nil for one that
// is not a Go program). It is the command layer's: the database and the
// matching are not the core's. An error fails the package.
type Advisor func(ctx context.Context, pkg Package, prog hashing.Program) ([]Advisory, error)

// KeptAdvisor returns the known advisories of packages of release p v
// that a build keeps (plats), from what the destinations hold of them:
// one KeptAdvice for each package it looked at. It is the command
// layer's, as Advisor is. An error is reported as a warning: the
// packages are kept all the same.
type KeptAdvisor func(ctx context.Context, p addrs.Provider, v addrs.Version, plats []addrs.Platform) ([]KeptAdvice, error)

// KeptAdvice is what a KeptAdvisor found of one kept package.
type KeptAdvice struct {
	Platform addrs.Platform
	// Advised says its advisories were matched: Advisories are then
	// current (none for a package without any, or not a Go program).
	// A package the destinations hold no SBOM of is not advised.
	Advised    bool
	Advisories []Advisory
	// Problem, if set, says why it could not be advised (its SBOM is
	// not its own): a warning.
	Problem string
}

// AdvisoryAction is what a build does with a release one of whose
// packages has advisories the policy does not ignore.
type AdvisoryAction int

// The actions of the vulnerabilities policy.
const (
	AdvisoryWarn   AdvisoryAction = iota // publish, and report the advisories
	AdvisoryHold                         // keep the release out, as held back
	AdvisoryRefuse                       // fail the release (a verification failure)
)

func (a AdvisoryAction) String() string {
	return [...]string{"warn", "hold", "refuse"}[a]
}

// AdvisoryPolicy says what a build does with advisories. Rules apply from
// the most general to the most specific, as TrustPolicy's: the default,
// then a namespace rule, then a provider rule; a rule's Action, if set,
// replaces the one before, its Ignore adds to it.
type AdvisoryPolicy struct {
	Default AdvisoryRule
	Rules   []AdvisoryRule
}

// AdvisoryRule is one level of the policy.
type AdvisoryRule struct {
	// Hostname, Namespace and Type select providers as TrustRule's do.
	Hostname  addrs.Hostname
	Namespace string
	Type      string
	// Action, if set, is the action for these providers.
	Action *AdvisoryAction
	// Ignore are advisory ids (or aliases) not acted on, with why.
	Ignore map[string]string
}

// Advisories is the policy in force for one provider.
type Advisories struct {
	Action AdvisoryAction
	Ignore map[string]string
}

// For resolves the policy for p.
func (ap AdvisoryPolicy) For(p addrs.Provider) Advisories {
	a := Advisories{Ignore: map[string]string{}}
	a.apply(ap.Default)
	for _, wantType := range []bool{false, true} {
		for _, r := range ap.Rules {
			if r.Hostname == p.Hostname && r.Namespace == p.Namespace && (r.Type != "*") == wantType && (r.Type == "*" || r.Type == p.Type) {
				a.apply(r)
			}
		}
	}
	return a
}

func (a *Advisories) apply(r AdvisoryRule) {
	if r.Action != nil {
		a.Action = *r.Action
	}
	maps.Copy(a.Ignore, r.Ignore)
}

// Acted are the advisories the policy acts on: those it does not ignore
// by id or alias.
func (a Advisories) Acted(advs []Advisory) []Advisory {
	return slices.DeleteFunc(slices.Clone(advs), func(adv Advisory) bool {
		if _, ok := a.Ignore[adv.ID]; ok {
			return true
		}
		return slices.ContainsFunc(adv.Aliases, func(alias string) bool {
			_, ok := a.Ignore[alias]
			return ok
		})
	})
}

// Gates says whether the policy may keep a release out: hold or refuse.
func (a Advisories) Gates() bool { return a.Action != AdvisoryWarn }

// describeAdvisories lists advisories for a message, the first few by
// name.
func describeAdvisories(advs []Advisory) string {
	const shown = 3
	parts := make([]string, 0, shown+1)
	for i, a := range advs {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(advs)-shown))
			break
		}
		parts = append(parts, a.String())
	}
	return strings.Join(parts, ", ")
}

// gates says whether the vulnerabilities policy may keep p's releases
// out: then no package of theirs is put ahead into a destination before
// the release's publication, which the policy decides on.
func (b *Builder) gates(p addrs.Provider) bool {
	return b.Options.Advise != nil && b.Options.Advisories.For(p).Gates()
}

// keptOut applies the vulnerabilities policy to a release whose packages
// fs passed: when one of them has advisories the policy acts on, none is
// published, each is reported held back (hold) or failed (refuse), and
// keptOut says so.
func (b *Builder) keptOut(r release, fs []fetched) bool {
	if !b.gates(r.req.Provider) {
		return false
	}
	pol := b.Options.Advisories.For(r.req.Provider)
	var cause *fetched
	var acted []Advisory
	for i := range fs {
		if acted = pol.Acted(fs[i].advisories); len(acted) > 0 {
			cause = &fs[i]
			break
		}
	}
	if cause == nil {
		return false
	}
	why := fmt.Sprintf("%s holds %s", cause.pkg.Platform, describeAdvisories(acted))
	if pol.Action == AdvisoryHold {
		b.warn("%s %s is held back by the vulnerabilities policy (hold): %s", r.req.Provider, r.version, why)
	}
	for _, f := range fs {
		b.Work.Discard(f.archive.Staged)
		res := Result{Package: f.pkg, Status: StatusHeld, Reason: "vulnerabilities: " + why, Bytes: f.size, Advisories: f.advisories}
		if pol.Action == AdvisoryRefuse {
			res.Status, res.Reason = StatusFailed, "vulnerabilities"
			res.Err = &VerificationError{Package: f.pkg, Problem: "refused by the vulnerabilities policy", Err: fmt.Errorf("the release's %s", why)}
		}
		b.emit(res)
	}
	return true
}

// adviseKept gives the packages of r the build keeps their known
// advisories, with a kept advisor: by platform, those it advised.
func (b *Builder) adviseKept(ctx context.Context, r release) map[addrs.Platform]KeptAdvice {
	if b.Options.AdviseKept == nil || len(r.kept) == 0 {
		return nil
	}
	plats := make([]addrs.Platform, len(r.kept))
	for i, k := range r.kept {
		plats[i] = k.plat
	}
	advice, err := b.Options.AdviseKept(ctx, r.req.Provider, r.version, plats)
	if err != nil {
		b.warn("%s %s: the known vulnerabilities of the packages kept were not matched: %v", r.req.Provider, r.version, err)
		return nil
	}
	out := map[addrs.Platform]KeptAdvice{}
	for _, a := range advice {
		if a.Problem != "" {
			b.warn("%s %s %s: the known vulnerabilities of the package kept were not matched: %s", r.req.Provider, r.version, a.Platform, a.Problem)
		}
		if a.Advised {
			out[a.Platform] = a
		}
	}
	return out
}
