package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// BuildChanges is the change record of a build: what it published, what
// the cool-down held back, what it refused and why, the key changes and
// re-releases it found, and the advisories of what it published. The
// caller records it (RecordChanges), which writes nothing when it says
// nothing changed.
func BuildChanges(rep *mirror.Report, holds []mirror.Hold) layout.ChangeRecord {
	var rec layout.ChangeRecord
	if rep == nil {
		return rec
	}
	added := map[string]int{} // "provider version" -> index in rec.Added
	rereleased := map[string]bool{}
	for _, res := range rep.Results {
		switch res.Status {
		case mirror.StatusMirrored:
			addPlatform(&rec, added, res.Package)
		case mirror.StatusFailed:
			addFailure(&rec, rereleased, res)
		}
		if res.Advised && len(res.Advisories) > 0 && (res.Status == mirror.StatusMirrored || res.Status == mirror.StatusHeld) {
			ca := layout.ChangeAdvisory{Package: res.String(), IDs: mirror.AdvisoryIDs(res.Advisories)}
			rec.Advisories = append(rec.Advisories, ca)
		}
	}
	for _, m := range rep.Modules {
		name := "module " + m.Module.String()
		switch {
		case m.Status == mirror.StatusMirrored:
			rec.Added = append(rec.Added, layout.ChangedPackage{Package: name, Version: m.Version.String()})
		case m.Status == mirror.StatusFailed && errors.Is(m.Err, mirror.ErrUpstreamMoved):
			rec.Rereleases = append(rec.Rereleases, layout.Rerelease{Package: name + " " + m.Version.String(), Differences: []string{m.Err.Error()}})
		}
	}
	for _, k := range rep.Keys {
		if k.Status == mirror.KeyFirst || k.Status == mirror.KeySame || k.Previous == nil {
			continue
		}
		rec.KeyChanges = append(rec.KeyChanges, layout.KeyChange{
			Package: k.Package.String(), Status: string(k.Status), KeyID: k.Signer.KeyID, Fingerprint: k.Signer.Fingerprint,
			PreviousVersion: k.Previous.Version.String(), PreviousKeyID: k.Previous.Signer.KeyID, PreviousFingerprint: k.Previous.Signer.Fingerprint,
		})
	}
	for _, h := range holds {
		rec.Held = append(rec.Held, layout.ChangeHold{Package: h.What, Version: h.Version.String(), FirstSeen: h.FirstSeen, Until: h.Until, New: h.New})
	}
	return rec
}

// addPlatform adds a published package to its version's entry.
func addPlatform(rec *layout.ChangeRecord, added map[string]int, pkg mirror.Package) {
	key := pkg.Provider.String() + " " + pkg.Version.String()
	i, ok := added[key]
	if !ok {
		i, added[key] = len(rec.Added), len(rec.Added)
		rec.Added = append(rec.Added, layout.ChangedPackage{Package: pkg.Provider.String(), Version: pkg.Version.String()})
	}
	rec.Added[i].Platforms = append(rec.Added[i].Platforms, pkg.Platform.String())
}

// addFailure records a failed package: a re-release once per release, a
// verification failure as refused; other failures (a download that did
// not complete) change nothing.
func addFailure(rec *layout.ChangeRecord, rereleased map[string]bool, res mirror.Result) {
	var rerelease *mirror.RereleaseError
	var verr *mirror.VerificationError
	switch {
	case errors.As(res.Err, &rerelease):
		name := rerelease.Package.String()
		if !rereleased[name] {
			rereleased[name] = true
			rec.Rereleases = append(rec.Rereleases, layout.Rerelease{Package: name, Differences: rerelease.Differences})
		}
	case errors.As(res.Err, &verr):
		rec.Refused = append(rec.Refused, layout.ChangeRefusal{Package: res.String(), Why: verr.Error()})
	}
}

// RecordChanges writes rec, made at the command's start (at), into every
// tree, signed with the settings' key (--sign-key). A record that says
// nothing changed writes nothing. A warning (an index that could not be
// read and was replaced) goes to warn.
func RecordChanges(ctx context.Context, trees []*layout.Tree, rec layout.ChangeRecord, at time.Time, s settings.Settings, warn func(string)) error {
	if !rec.Changed() {
		return nil
	}
	rec.Time, rec.Tool, rec.Command = at, s.UserAgent, s.Command
	var sealer layout.Sealer
	if s.SignKey != nil {
		sealer = s.SignKey
	}
	for _, t := range trees {
		report, err := t.RecordChange(ctx, rec, sealer)
		if report.Warning != "" && warn != nil {
			warn(report.Warning)
		}
		if err != nil {
			return fmt.Errorf("record the changes in %s: %w", t.Location(), err)
		}
	}
	return nil
}

// finishBound bounds the records written after an interrupt.
const finishBound = 30 * time.Second

// Finishing is the context for recording what a command published before
// ctx ended (an interrupt): what is published is public, so its change
// record, first-seen times and findings are written all the same, within
// a short bound, rather than lost with the interrupt.
func Finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), finishBound)
}

// Now is the settings' clock, read once by a command that records
// changes.
func Now(s settings.Settings) time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// PrunedChanges is the change record of versions a prune removed, each
// "PROVIDER VERSION".
func PrunedChanges(versions []string) layout.ChangeRecord {
	var rec layout.ChangeRecord
	for _, v := range versions {
		p, ver, _ := strings.Cut(v, " ")
		rec.Pruned = append(rec.Pruned, layout.ChangedPackage{Package: p, Version: ver})
	}
	return rec
}
