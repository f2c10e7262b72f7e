package lockfile

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/mirror"
)

const checkPath = "live/app/.terraform.lock.hcl"

var (
	fooAddr = addrs.MustParseProvider("hashicorp/foo")
	barAddr = addrs.MustParseProvider("hashicorp/bar")
	linux   = addrs.MustParsePlatform("linux_amd64")
	darwin  = addrs.MustParsePlatform("darwin_arm64")
)

// sums are the hashes of foo's package for plat: the zip's h1: equals the
// unpacked one (no directory entries) unless dirEntries.
func sums(plat string, dirEntries bool) hashing.ArchiveSums {
	s := hashing.ArchiveSums{
		ZH: hashing.Hash("zh:" + strings.Repeat(plat[:1], 64)),
		H1: hashing.Hash("h1:" + plat + "="),
	}
	s.H1Unpacked = s.H1
	if dirEntries {
		s.H1 = hashing.Hash("h1:zip-" + plat + "=")
	}
	return s
}

// fooEntry is what the mirror holds of foo 1.1.0, for linux and darwin,
// as the locker returns it: every platform's unpacked h1: and every zh:.
func fooEntry() mirror.LockEntry {
	e := mirror.LockEntry{Provider: fooAddr, Version: addrs.MustParseVersion("1.1.0"),
		Packages: map[addrs.Platform]hashing.ArchiveSums{linux: sums("linux_amd64", false), darwin: sums("darwin_arm64", false)}}
	for _, s := range e.Packages {
		e.Hashes = append(e.Hashes, s.H1Unpacked, s.ZH)
	}
	e.Hashes = normalizeHashes(e.Hashes)
	return e
}

func fooNeed(constraints ...string) mirror.Need {
	return mirror.Need{Provider: fooAddr, Constraints: constraints, Root: "live/app"}
}

// complete is the lock file tfmirror lock writes for fooEntry.
func complete() *File {
	e := fooEntry()
	return &File{Locks: map[addrs.Provider]*Lock{fooAddr: {Provider: fooAddr, Version: e.Version, Constraints: "~> 1.0", Hashes: e.Hashes}}}
}

func compare(t *testing.T, f *File, src []byte, picked ...selected) Verdict {
	t.Helper()
	if src == nil {
		src = f.Bytes()
	}
	v, err := verdict(checkPath, src, true, f, picked, networkBoth)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func selectedFoo() selected { return selected{Need: fooNeed("~> 1.0"), Entry: fooEntry()} }

// only fails unless the verdict has exactly one finding, of reason and
// effect, naming the file, provider, version and (if any) platform.
func only(t *testing.T, v Verdict, reason Reason, effect Effect, platform string) Finding {
	t.Helper()
	if len(v.Findings) != 1 {
		t.Fatalf("%d findings, want one %s:\n%s", len(v.Findings), reason, lines(v))
	}
	f := v.Findings[0]
	if f.Reason != reason || f.Effect != effect || f.Platform != platform {
		t.Errorf("finding %s/%s on %q, want %s/%s on %q: %s", f.Reason, f.Effect, f.Platform, reason, effect, platform, f)
	}
	line := f.String()
	for _, part := range []string{checkPath, platform} {
		if !strings.Contains(line, part) {
			t.Errorf("the line does not name %q: %s", part, line)
		}
	}
	if !f.Provider.IsZero() && (!strings.Contains(line, f.Provider.String()) || !strings.Contains(line, f.Version)) {
		t.Errorf("the line does not name the provider and version: %s", line)
	}
	if want := effect != EffectNone; v.Churns() != want {
		t.Errorf("Churns() = %v, want %v", v.Churns(), want)
	}
	return f
}

func lines(v Verdict) string {
	var b strings.Builder
	for _, f := range v.Findings {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func TestCheckCompleteFileSurvives(t *testing.T) {
	v := compare(t, complete(), nil, selectedFoo())
	if len(v.Findings) != 0 || v.Churns() {
		t.Errorf("a complete file has findings:\n%s", lines(v))
	}
}

func TestCheckMissingPlatformH1(t *testing.T) {
	f := complete()
	f.Locks[fooAddr].Hashes = slices.DeleteFunc(f.Locks[fooAddr].Hashes, func(h hashing.Hash) bool { return h == sums("darwin_arm64", false).H1Unpacked })
	got := only(t, compare(t, f, nil, selectedFoo()), ReasonMissingH1, EffectRewrite, "darwin_arm64")
	if !strings.Contains(got.Detail, string(sums("darwin_arm64", false).H1Unpacked)) {
		t.Errorf("the finding does not name the h1: init adds: %s", got)
	}
}

// A file written by OpenTofu after installing linux_amd64 from a network
// mirror holds that platform's hashes only: it survives init on linux,
// and init on darwin fails, the darwin package matching none of them.
func TestCheckOnePlatformsFile(t *testing.T) {
	f := complete()
	f.Locks[fooAddr].Hashes = sums("linux_amd64", false).All()
	only(t, compare(t, f, nil, selectedFoo()), ReasonNoHashMatches, EffectFail, "darwin_arm64")
	linuxOnly := selectedFoo()
	delete(linuxOnly.Entry.Packages, darwin)
	if v := compare(t, f, nil, linuxOnly); len(v.Findings) != 0 {
		t.Errorf("checked for linux_amd64 only, OpenTofu's own file has findings:\n%s", lines(v))
	}
}

// OpenTofu records the hashes a network mirror lists that match the
// package: a zip with directory entries has an h1: of its own.
func TestCheckMirrorHashesOpenTofuAdds(t *testing.T) {
	f := complete()
	s := selectedFoo()
	s.Entry.Packages[linux] = sums("linux_amd64", true)
	got := only(t, compare(t, f, nil, s), ReasonMirrorHashes, EffectRewrite, "linux_amd64")
	if !strings.Contains(got.Detail, "h1:zip-linux_amd64=") {
		t.Errorf("the finding does not name the zip's h1: %s", got)
	}
	f.Locks[fooAddr].Hashes = slices.DeleteFunc(f.Locks[fooAddr].Hashes, func(h hashing.Hash) bool { return h == sums("linux_amd64", false).ZH })
	only(t, compare(t, f, nil, selectedFoo()), ReasonMirrorHashes, EffectRewrite, "linux_amd64")
}

// Only OpenTofu adds the mirror's hashes, and only when it reads them
// from the mirror: a file without them survives terraform init, and tofu
// init through a filesystem mirror.
func TestCheckMirrorHashesOnlyForOpenTofuReadingThem(t *testing.T) {
	f := complete()
	f.Locks[fooAddr].Hashes = slices.DeleteFunc(f.Locks[fooAddr].Hashes, func(h hashing.Hash) bool { return h == sums("linux_amd64", false).ZH })
	for _, in := range []Install{{Terraform: true, MirrorHashes: true}, {OpenTofu: true, Terraform: true}} {
		v, err := verdict(checkPath, f.Bytes(), true, f, []selected{selectedFoo()}, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Findings) != 0 {
			t.Errorf("%+v: findings:\n%s", in, lines(v))
		}
	}
}

func TestCheckNoHashMatches(t *testing.T) {
	f := complete()
	f.Locks[fooAddr].Hashes = []hashing.Hash{"h1:fromanotherregistry=", "zh:" + hashing.Hash(strings.Repeat("9", 64))}
	v := compare(t, f, nil, selectedFoo())
	if len(v.Findings) != 2 || !v.Churns() {
		t.Fatalf("want a checksum mismatch on each platform:\n%s", lines(v))
	}
	for _, got := range v.Findings {
		if got.Reason != ReasonNoHashMatches || got.Effect != EffectFail {
			t.Errorf("finding %s/%s, want checksum-mismatch/fail", got.Reason, got.Effect)
		}
	}
}

// A stray hash beside ones that match changes nothing: init keeps it.
func TestCheckExtraHashSurvives(t *testing.T) {
	f := complete()
	f.Locks[fooAddr].Hashes = normalizeHashes(append(f.Locks[fooAddr].Hashes, "h1:stray="))
	if v := compare(t, f, nil, selectedFoo()); len(v.Findings) != 0 {
		t.Errorf("findings for a stray hash:\n%s", lines(v))
	}
}

// init writes a lock's hashes back sorted, each once, of the schemes it
// checks: a list that is not (a hand-merged file) is rewritten.
func TestCheckHashListInitRewrites(t *testing.T) {
	for name, mutate := range map[string]func([]hashing.Hash) []hashing.Hash{
		"out of order":      func(h []hashing.Hash) []hashing.Hash { h[0], h[1] = h[1], h[0]; return h },
		"a hash twice":      func(h []hashing.Hash) []hashing.Hash { return slices.Insert(h, 1, h[0]) },
		"an unknown scheme": func(h []hashing.Hash) []hashing.Hash { return normalizeHashes(append(h, "x9:unknown")) },
	} {
		t.Run(name, func(t *testing.T) {
			f := complete()
			f.Locks[fooAddr].Listed = mutate(slices.Clone(f.Locks[fooAddr].Hashes))
			f.Locks[fooAddr].Hashes = normalizeHashes(f.Locks[fooAddr].Listed)
			only(t, compare(t, f, nil, selectedFoo()), ReasonHashList, EffectRewrite, "")
		})
	}
}

func TestCheckNoHashes(t *testing.T) {
	f := complete()
	f.Locks[fooAddr].Hashes = nil
	only(t, compare(t, f, nil, selectedFoo()), ReasonNoHashes, EffectRewrite, "")
}

func TestCheckMissingProvider(t *testing.T) {
	bar := selected{Need: mirror.Need{Provider: barAddr, Root: "live/app"}, Entry: mirror.LockEntry{Provider: barAddr, Version: addrs.MustParseVersion("2.0.0")}}
	got := only(t, compare(t, complete(), nil, selectedFoo(), bar), ReasonMissingProvider, EffectRewrite, "")
	if got.Provider != barAddr || got.Version != "2.0.0" {
		t.Errorf("finding names %s %s, want %s 2.0.0", got.Provider, got.Version, barAddr)
	}
}

func TestCheckStaleProvider(t *testing.T) {
	f := complete()
	f.Locks[barAddr] = &Lock{Provider: barAddr, Version: addrs.MustParseVersion("2.0.0"), Hashes: []hashing.Hash{"h1:bar="}}
	got := only(t, compare(t, f, nil, selectedFoo()), ReasonStaleProvider, EffectRewrite, "")
	if got.Provider != barAddr {
		t.Errorf("finding names %s, want %s", got.Provider, barAddr)
	}
}

func TestCheckLockedVersionInitCannotInstall(t *testing.T) {
	for _, c := range []struct {
		notAllowed bool
		reason     Reason
	}{{true, ReasonNotAllowed}, {false, ReasonNotHeld}} {
		locked := &mirror.LockedError{Provider: fooAddr, Version: addrs.MustParseVersion("1.1.0"), Constraints: ">= 2.0", NotAllowed: c.notAllowed}
		got := only(t, compare(t, complete(), nil, selected{Need: fooNeed(">= 2.0"), Locked: locked}), c.reason, EffectFail, "")
		if got.Version != "1.1.0" {
			t.Errorf("finding names version %q, want the locked 1.1.0", got.Version)
		}
	}
}

// Init compares locks by provider, version and hashes: new constraints
// alone leave the file as it is, and are written with any other change.
func TestCheckConstraintsAloneSurvive(t *testing.T) {
	s := selectedFoo()
	s.Need = fooNeed(">= 1.0")
	got := only(t, compare(t, complete(), nil, s), ReasonConstraints, EffectNone, "")
	if !strings.Contains(got.Detail, `"~> 1.0"`) || !strings.Contains(got.Detail, `">= 1.0.0"`) {
		t.Errorf("the finding does not name both constraints: %s", got)
	}
}

func TestCheckFormat(t *testing.T) {
	f := complete()
	canon := f.Bytes()
	tf := bytes.Replace(canon, []byte(`"tofu init"`), []byte(`"terraform init"`), 1)
	if v := compare(t, f, tf, selectedFoo()); len(v.Findings) != 0 {
		t.Errorf("Terraform's header is flagged:\n%s", lines(v))
	}
	reordered := strings.Replace(string(canon), "  version     = \"1.1.0\"\n  constraints = \"~> 1.0\"\n", "  constraints = \"~> 1.0\"\n  version = \"1.1.0\"\n", 1)
	if reordered == string(canon) {
		t.Fatal("the test did not reorder the file")
	}
	only(t, compare(t, f, []byte(reordered), selectedFoo()), ReasonFormat, EffectNone, "")
	f.Locks[fooAddr].Hashes = sums("linux_amd64", false).All()
	v := compare(t, f, []byte(reordered), selectedFoo())
	if !v.Churns() || !slices.ContainsFunc(v.Findings, func(f Finding) bool { return f.Reason == ReasonFormat }) {
		t.Errorf("a rewritten file that init also reformats:\n%s", lines(v))
	}
}

func TestCheckNoLockFile(t *testing.T) {
	v, err := verdict(checkPath, nil, false, &File{}, []selected{selectedFoo()}, networkBoth)
	if err != nil {
		t.Fatal(err)
	}
	only(t, v, ReasonNoLockFile, EffectRewrite, "")
	v, err = verdict(checkPath, nil, false, &File{}, nil, networkBoth)
	if err != nil || len(v.Findings) != 0 {
		t.Errorf("no providers, no file: %v\n%s", err, lines(v))
	}
}

// networkBoth is both clients installing through a network mirror.
var networkBoth = Install{OpenTofu: true, Terraform: true, MirrorHashes: true}
