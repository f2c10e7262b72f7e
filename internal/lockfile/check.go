package lockfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Reason says why "init" would rewrite a lock file, or fail on it.
type Reason string

// The reasons a check finds. Those whose Effect is EffectNone change
// nothing on their own: init compares locks by provider, version and
// hashes only, and rewrites the file (constraints and layout included)
// only when one of those changes.
const (
	ReasonNoLockFile      Reason = "no-lock-file"        // init writes one
	ReasonMissingProvider Reason = "missing-provider"    // init adds it
	ReasonStaleProvider   Reason = "stale-provider"      // init removes it
	ReasonNotAllowed      Reason = "version-not-allowed" // init fails
	ReasonNotHeld         Reason = "version-not-held"    // init fails
	ReasonTerraformHost   Reason = "terraform-host"      // terraform init locks another provider
	ReasonNoHashes        Reason = "no-hashes"           // init records the package's
	ReasonNoHashMatches   Reason = "checksum-mismatch"   // init fails
	ReasonMissingH1       Reason = "missing-h1"          // init adds the package's h1:
	ReasonMirrorHashes    Reason = "missing-mirror-hash" // OpenTofu adds the mirror's hashes
	ReasonHashList        Reason = "hash-list"           // init sorts the hashes, keeps each once
	ReasonConstraints     Reason = "constraints"         // rewritten with the rest
	ReasonFormat          Reason = "format"              // rewritten with the rest
)

// Effect is what init does about a finding.
type Effect string

// The effects of a finding.
const (
	EffectRewrite Effect = "rewrite" // init rewrites the file
	EffectFail    Effect = "fail"    // init fails
	EffectNone    Effect = "none"    // only with a rewrite for another reason
)

// Finding is one reason a lock file would not survive init, or one
// difference init would make only along with another.
type Finding struct {
	Path     string
	Provider addrs.Provider // zero for the whole file
	Version  string
	Platform string
	Reason   Reason
	Effect   Effect
	// Detail says what init would do, for a person.
	Detail string
}

// String is the finding on one line, naming the file, provider, version
// and platform.
func (f Finding) String() string {
	parts := []string{f.Path}
	if !f.Provider.IsZero() {
		parts = append(parts, strings.TrimSpace(f.Provider.String()+" "+f.Version))
	}
	if f.Platform != "" {
		parts = append(parts, "on "+f.Platform)
	}
	return strings.Join(parts, ": ") + ": " + f.Detail
}

// Verdict is what init would do to one root module's lock file.
type Verdict struct {
	Path     string
	Findings []Finding
}

// Churns reports whether init would rewrite the file or fail on it.
func (v Verdict) Churns() bool {
	return slices.ContainsFunc(v.Findings, func(f Finding) bool { return f.Effect != EffectNone })
}

// Pinned reports whether the file pins a version init cannot install, one
// the constraints exclude or the mirror lacks, or the configuration names
// a provider Terraform reads on another registry than the file or the
// mirror holds: Compute cannot write a file init keeps, so only the user
// can fix it.
func (v Verdict) Pinned() bool {
	return slices.ContainsFunc(v.Findings, func(f Finding) bool {
		return f.Reason == ReasonNotAllowed || f.Reason == ReasonNotHeld || f.Reason == ReasonTerraformHost
	})
}

// Install is how init would install from the mirror: which clients, and
// whether they read the mirror's own list of hashes, which decides what
// they record beyond each package's h1:.
type Install struct {
	// OpenTofu says the verdict covers tofu init, Terraform terraform
	// init.
	OpenTofu, Terraform bool
	// MirrorHashes says the clients read the mirror's list of hashes
	// (network_mirror, oci_mirror): OpenTofu then records the archive's
	// h1: and zh: it checked the package against. A filesystem mirror
	// lists none, and Terraform records only the h1: it computes.
	MirrorHashes bool
	// TerraformHosts reads the configuration's addresses without a
	// registry host as Terraform does (registry.terraform.io), where they
	// name other providers than OpenTofu's: set when Terraform is asked
	// for by name, not by the default of both clients, which reads them
	// as OpenTofu does.
	TerraformHosts bool
}

// Check works out what "tofu init" or "terraform init", installing from
// the mirror the locker reads on each of platforms (none: every platform
// the mirror holds of a release), would do to the root module's lock
// file old (read from dir): nothing, rewrite it, or fail. It selects
// versions and hashes with the locker as Compute does and writes nothing.
// An error is a problem of the mirror or the configuration, not of the
// lock file.
func Check(ctx context.Context, l *mirror.Locker, dir string, needs []mirror.Need, old *File, platforms []addrs.Platform, in Install) (Verdict, error) {
	path := filepath.Join(dir, FileName)
	src, err := hclsafe.ReadFile(path, hclsafe.MaxLockSize)
	exists := !errors.Is(err, fs.ErrNotExist)
	if err != nil && exists {
		return Verdict{Path: path}, fmt.Errorf("check lock file: %w", err)
	}
	var picked []selected
	var errs []error
	for _, n := range needs {
		entry, err := l.Lock(ctx, n, platforms)
		var locked *mirror.LockedError
		switch {
		case errors.As(err, &locked):
			picked = append(picked, selected{Need: n, Locked: locked})
		case errors.Is(err, layout.ErrNotInMirror) && n.ImpliedHost && n.Provider.Hostname == addrs.TerraformRegistryHost:
			// Read as Terraform reads it, the address names a provider
			// the mirror does not hold.
			picked = append(picked, selected{Need: n, Absent: true})
		case err != nil:
			errs = append(errs, err)
		default:
			picked = append(picked, selected{Need: n, Entry: entry})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Verdict{Path: path}, err
	}
	return verdict(path, src, exists, old, picked, in)
}

// selected is what the locker selected for one provider the configuration
// needs: its entry, or the locked version init cannot install.
type selected struct {
	Need   mirror.Need
	Entry  mirror.LockEntry
	Locked *mirror.LockedError
	// Absent says the mirror does not hold the provider Terraform reads
	// an address without a host as.
	Absent bool
}

// verdict is Check once the versions are selected: src is the file at
// path (if it exists), old the same parsed.
func verdict(path string, src []byte, exists bool, old *File, picked []selected, in Install) (Verdict, error) {
	v := Verdict{Path: path}
	if old == nil {
		old = &File{}
	}
	var errs []error
	for _, s := range picked {
		found, err := compareOne(path, s, old, in)
		errs = append(errs, err)
		v.Findings = append(v.Findings, found...)
	}
	if err := errors.Join(errs...); err != nil {
		return v, err
	}
	v.Findings = append(v.Findings, staleLocks(path, picked, old)...)
	switch {
	case !exists && len(picked) > 0:
		// What makes init fail stays said: it writes no file then.
		fails := slices.DeleteFunc(v.Findings, func(f Finding) bool { return f.Effect != EffectFail })
		if len(fails) > 0 {
			v.Findings = fails
			break
		}
		v.Findings = []Finding{{Path: path, Reason: ReasonNoLockFile, Effect: EffectRewrite,
			Detail: "there is no lock file: init writes one for " + plural.Count(len(picked), "provider")}}
	case exists && !canonical(src, old):
		v.Findings = append(v.Findings, Finding{Path: path, Reason: ReasonFormat, Effect: EffectNone,
			Detail: "not in the form init writes: a rewrite for another reason reformats the whole file"})
	}
	return v, nil
}

// compareOne finds what init would change in the lock of one provider the
// configuration needs.
func compareOne(path string, s selected, old *File, in Install) ([]Finding, error) {
	n := s.Need
	at := Finding{Path: path, Provider: n.Provider}
	if locked := s.Locked; locked != nil {
		at.Version, at.Effect = locked.Version.String(), EffectFail
		at.Reason, at.Detail = ReasonNotHeld, "the mirror does not hold this version: init fails (the previously-selected version is no longer available)"
		if locked.NotAllowed {
			at.Reason = ReasonNotAllowed
			at.Detail = fmt.Sprintf("the configuration's constraints %q no longer allow this version: init fails (init -upgrade selects another)", locked.Constraints)
		}
		return []Finding{at}, nil
	}
	if s.Absent {
		at.Reason, at.Effect = ReasonTerraformHost, EffectFail
		at.Detail = fmt.Sprintf("the configuration names it without a registry host, which terraform init reads as %s, and the mirror does not hold that provider: init fails; mirror it (provider %q in the manifest) or write the host the mirror holds in the source", n.Provider, n.Provider.String())
		return []Finding{at}, nil
	}
	if in.TerraformHosts && n.ImpliedHost && n.Provider.Hostname == addrs.DefaultRegistryHost {
		// Terraform reads the address on its own registry: another
		// provider, which the lock file does not hold.
		at.Reason, at.Effect = ReasonTerraformHost, EffectFail
		at.Detail = fmt.Sprintf("the configuration names it without a registry host, which terraform init reads as registry.terraform.io/%s/%s, not %s: it fails with -lockfile=readonly and otherwise locks that provider instead; write the host in the source (%q) for a lock file both clients keep",
			n.Provider.Namespace, n.Provider.Type, n.Provider, n.Provider.String())
		return []Finding{at}, nil
	}
	want, err := newLock(filepath.Dir(path), n, s.Entry, old)
	if err != nil {
		return nil, err
	}
	at.Version = s.Entry.Version.String()
	prev, ok := old.lock(n.Provider)
	if !ok {
		at.Reason, at.Effect, at.Detail = ReasonMissingProvider, EffectRewrite, "the configuration needs this provider and the file does not lock it: init adds it"
		return []Finding{at}, nil
	}
	found := hashFindings(at, prev.Hashes, s.Entry, in)
	if listed := prev.Listed; listed != nil && !slices.Equal(keptHashes(listed), listed) {
		f := at
		f.Reason, f.Effect = ReasonHashList, EffectRewrite
		f.Detail = "the hashes are not listed as init keeps them (sorted, each once, h1: and zh: only): init rewrites the list"
		found = append(found, f)
	}
	if prev.Constraints != want.Constraints {
		at.Reason, at.Effect = ReasonConstraints, EffectNone
		at.Detail = fmt.Sprintf("the file records constraints %q, the configuration says %q: init records them only when it rewrites the file for another reason", prev.Constraints, want.Constraints)
		found = append(found, at)
	}
	return found, nil
}

// hashFindings compares the hashes a lock holds with those init checks
// each platform's package against and records: the h1: of the unpacked
// package (both clients), and the mirror's h1: and zh: of the archive
// (OpenTofu records those it checked, when it reads them from the mirror).
func hashFindings(at Finding, have []hashing.Hash, entry mirror.LockEntry, in Install) []Finding {
	if !slices.ContainsFunc(have, preferred) {
		at.Reason, at.Effect = ReasonNoHashes, EffectRewrite
		at.Detail = "the lock has no h1: or zh: hash: init installs unchecked and records the package's hashes"
		return []Finding{at}
	}
	var out []Finding
	for _, plat := range sortedPlatforms(entry.Packages) {
		sums, f := entry.Packages[plat], at
		f.Platform = plat.String()
		switch {
		case !slices.Contains(have, sums.H1) && !slices.Contains(have, sums.ZH):
			f.Reason, f.Effect = ReasonNoHashMatches, EffectFail
			f.Detail = fmt.Sprintf("none of the lock's hashes matches the mirror's package (%s, %s): init fails with a checksum mismatch", sums.H1, sums.ZH)
		case !slices.Contains(have, sums.H1Unpacked):
			f.Reason, f.Effect = ReasonMissingH1, EffectRewrite
			f.Detail = fmt.Sprintf("no h1: for this platform: init adds %s", sums.H1Unpacked)
		case !in.OpenTofu || !in.MirrorHashes:
			continue
		default:
			lacking := slices.DeleteFunc([]hashing.Hash{sums.H1, sums.ZH}, func(h hashing.Hash) bool { return slices.Contains(have, h) })
			if len(lacking) == 0 {
				continue
			}
			f.Reason, f.Effect = ReasonMirrorHashes, EffectRewrite
			f.Detail = fmt.Sprintf("OpenTofu adds the mirror's %s", joinHashes(lacking))
		}
		out = append(out, f)
	}
	return out
}

// keptHashes is a lock's hash list as init writes it back: sorted, each
// hash once, and only the schemes it checks packages against (it drops
// the others).
func keptHashes(have []hashing.Hash) []hashing.Hash {
	out := slices.DeleteFunc(slices.Clone(have), func(h hashing.Hash) bool { return !preferred(h) })
	slices.Sort(out)
	return slices.Compact(out)
}

// staleLocks are the locks of providers the configuration no longer needs.
func staleLocks(path string, picked []selected, old *File) []Finding {
	var out []Finding
	for _, l := range old.Sorted() {
		if slices.ContainsFunc(picked, func(s selected) bool { return s.Need.Provider == l.Provider }) {
			continue
		}
		out = append(out, Finding{Path: path, Provider: l.Provider, Version: l.Version.String(),
			Reason: ReasonStaleProvider, Effect: EffectRewrite,
			Detail: "the configuration no longer needs this provider: init removes it"})
	}
	return out
}

// canonical reports whether src is the file f as OpenTofu or Terraform
// writes it (they differ only in the header's command name).
func canonical(src []byte, f *File) bool {
	want := f.Bytes()
	if bytes.Equal(src, want) {
		return true
	}
	tf := bytes.Replace(want, []byte(`"tofu init"`), []byte(`"terraform init"`), 1)
	return bytes.Equal(src, tf)
}

// preferred reports whether h is of a scheme init checks packages against.
func preferred(h hashing.Hash) bool {
	return strings.HasPrefix(string(h), hashing.SchemeH1) || strings.HasPrefix(string(h), hashing.SchemeZH)
}

func sortedPlatforms(m map[addrs.Platform]hashing.ArchiveSums) []addrs.Platform {
	out := make([]addrs.Platform, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func joinHashes(hs []hashing.Hash) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = string(h)
	}
	return strings.Join(s, " and ")
}
