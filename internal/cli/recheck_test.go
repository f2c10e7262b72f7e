package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// --recheck: a release re-published at the origin under the same version
// with other bytes (or signed again by another key) is found by asking
// the origin for its SHA256SUMS and signature again, and the mirror keeps
// what it had.

func zhOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "zh:" + hex.EncodeToString(sum[:])
}

// archiveRequests counts the requests for hashicorp/foo's archives.
func (o keysOrigin) archiveRequests(versions ...string) int {
	n := 0
	for _, v := range versions {
		for _, plat := range []string{"linux_amd64", "darwin_arm64"} {
			n += o.reg.RequestCount(fakeregistry.ArchivePath("hashicorp", "foo", v, plat))
		}
	}
	return n
}

func TestRecheckFindsAReRelease(t *testing.T) {
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	// manifest mirrors every version of hashicorp/foo, with trust (a
	// trust block's body) if given.
	manifest := func(t *testing.T, o keysOrigin, trust string) {
		if trust != "" {
			trust = "trust \"*\" {\n  " + trust + "\n}\n"
		}
		writeManifest(t, o.dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = ">= 1.0.0" }
`+trust+o.hostBlock("registry.opentofu.org"))
	}
	newMirror := func(t *testing.T) keysOrigin {
		o := keysOrigin{origin: newOrigin(t), dir: t.TempDir()}
		for _, v := range []string{"1.0.0", "2.0.0"} {
			o.reg.Add("hashicorp", "foo", v, "linux_amd64", "darwin_arm64")
			o.signWith(t, v, a, time.Time{}, a)
		}
		manifest(t, o, "")
		if code, out := o.tfmirror(t, "build"); code != ExitOK {
			t.Fatalf("build: exit %d\n%s", code, out)
		}
		if code, out := o.tfmirror(t, "build", "--recheck"); code != ExitOK || !strings.Contains(out, "0 mirrored, 4 already present") {
			t.Fatalf("recheck of an origin that changed nothing: exit %d, want 0 and everything kept\n%s", code, out)
		}
		return o
	}
	// recheck runs a plain build (which notices nothing) and one with
	// args, which must fail with exit 3 saying want, download no archive
	// and change nothing in the mirror.
	recheck := func(t *testing.T, o keysOrigin, want []string, args ...string) string {
		t.Helper()
		before := snapshot(t, filepath.Join(o.dir, "site"))
		if code, out := o.tfmirror(t, "build"); code != ExitOK {
			t.Fatalf("a build without --recheck: exit %d, want 0 (it asks nothing of a release it holds)\n%s", code, out)
		}
		archives := o.archiveRequests("1.0.0", "2.0.0")
		code, out := o.tfmirror(t, append([]string{"build"}, args...)...)
		if code != ExitVerification {
			t.Fatalf("exit %d, want %d\n%s", code, ExitVerification, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the report does not say %q\n%s", w, out)
			}
		}
		if n := o.archiveRequests("1.0.0", "2.0.0") - archives; n != 0 {
			t.Errorf("the recheck downloaded %d archives", n)
		}
		after := snapshot(t, filepath.Join(o.dir, "site"))
		// The private directory holds the lock's holder; the change
		// records and the page that shows them say what the recheck
		// found.
		for _, files := range []map[string]string{before, after} {
			maps.DeleteFunc(files, func(f, _ string) bool {
				return strings.HasPrefix(f, layout.PrivateDirName) || isChangeFile(filepath.ToSlash(f)) || f == "index.html"
			})
		}
		idx := changeIndex(t, filepath.Join(o.dir, "site"))
		if len(idx.Records) == 0 || !strings.Contains(strings.Join(idx.Records[0].Lines, "\n"), "re-released: "+keysFoo.String()) {
			t.Errorf("no change record of the re-release: %+v", idx.Records)
		}
		for _, f := range slices.Sorted(maps.Keys(after)) {
			if before[f] != after[f] {
				t.Errorf("the recheck changed %s", f)
			}
		}
		if len(after) != len(before) {
			t.Errorf("the mirror held %d files, and %d after the recheck", len(before), len(after))
		}
		return out
	}

	t.Run("other bytes for one archive", func(t *testing.T) {
		o := newMirror(t)
		old := o.reg.Archive("hashicorp", "foo", "1.0.0", "linux_amd64")
		o.reg.AddWithOptions("hashicorp", "foo", "1.0.0", fakeregistry.Options{DirEntries: true}, "linux_amd64")
		o.signWith(t, "1.0.0", a, time.Time{}, a)
		now := o.reg.Archive("hashicorp", "foo", "1.0.0", "linux_amd64")
		if bytes.Equal(old, now) {
			t.Fatal("the re-release has the same bytes")
		}
		out := recheck(t, o, []string{
			keysFoo.String() + " 1.0.0 linux_amd64", keysFoo.String() + " 1.0.0 darwin_arm64", "re-released at the origin",
			"terraform-provider-foo_1.0.0_linux_amd64.zip (linux_amd64): the mirror kept " + zhOf(old) + ", the origin now lists " + zhOf(now),
		}, "--recheck")
		if strings.Contains(out, "2.0.0 linux_amd64: verification failed") {
			t.Errorf("2.0.0, unchanged, is reported\n%s", out)
		}
		// --recheck-modules is the same flag.
		recheck(t, o, []string{"re-released at the origin"}, "--recheck-modules")
	})
	t.Run("signed again by another key", func(t *testing.T) {
		o := newMirror(t)
		o.signWith(t, "2.0.0", b, time.Time{}, b)
		recheck(t, o, []string{
			keysFoo.String() + " 2.0.0 linux_amd64", "re-released at the origin",
			"signed by key " + b.ID + " (fingerprint " + b.Fingerprint + "), where the mirror kept a signature by key " + a.ID + " (fingerprint " + a.Fingerprint + ")",
		}, "--recheck=100%")
	})
	// After a key rotation the origin signs its old releases again with
	// the new key: the same files and digests, signed by a key the mirror
	// trusts for the provider (the trust policy accepts it, or a release
	// the mirror holds is signed by it). No difference, every run: the
	// mirror keeps its signatures.
	t.Run("signed again by a key the mirror trusts", func(t *testing.T) {
		o := newMirror(t)
		o.signWith(t, "1.0.0", b, time.Time{}, b)
		o.signWith(t, "2.0.0", b, time.Time{}, b)
		manifest(t, o, `accept_new_keys = ["`+b.Fingerprint+`"]`)
		for range 2 {
			if code, out := o.tfmirror(t, "build", "--recheck"); code != ExitOK || !strings.Contains(out, "0 mirrored, 4 already present") {
				t.Fatalf("recheck of releases signed again by an accepted key: exit %d, want 0\n%s", code, out)
			}
		}
		// A release the mirror holds signed by B: B is the provider's key
		// now, without a word in the manifest.
		o.reg.Add("hashicorp", "foo", "3.0.0", "linux_amd64", "darwin_arm64")
		o.signWith(t, "3.0.0", b, time.Time{}, b)
		manifest(t, o, "")
		if code, out := o.tfmirror(t, "build"); code != ExitOK {
			t.Fatalf("build of 3.0.0: exit %d\n%s", code, out)
		}
		if code, out := o.tfmirror(t, "build", "--recheck"); code != ExitOK || !strings.Contains(out, "0 mirrored, 6 already present") {
			t.Fatalf("recheck once the mirror holds a release signed by the new key: exit %d, want 0\n%s", code, out)
		}
		if got := o.provenance(t, "site", "1.0.0").KeyID; got != a.ID {
			t.Errorf("1.0.0's provenance names key %s, want %s, the key of the signature the mirror kept", got, a.ID)
		}
	})
	t.Run("a platform added", func(t *testing.T) {
		o := newMirror(t)
		o.reg.Add("hashicorp", "foo", "2.0.0", "windows_amd64")
		o.signWith(t, "2.0.0", a, time.Time{}, a)
		recheck(t, o, []string{"terraform-provider-foo_2.0.0_windows_amd64.zip: added at the origin, zh:"}, "--recheck")
	})
}

func TestRecheckSampleCoversEveryVersion(t *testing.T) {
	o := keysOrigin{origin: newOrigin(t), dir: t.TempDir()}
	versions := []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0"}
	for _, v := range versions {
		o.reg.Add("hashicorp", "foo", v, "linux_amd64")
	}
	o.manifest(t, ">= 1.0.0", "")
	build := func(at time.Time, args ...string) (int, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		wd, _ := os.Getwd()
		t.Chdir(o.dir)
		defer t.Chdir(wd)
		code := Main(context.Background(), Env{Args: append([]string{"build"}, args...), Stdout: &stdout, Stderr: &stderr, Environ: o.environ, now: func() time.Time { return at }})
		return code, stdout.String() + stderr.String()
	}
	checked := func(at time.Time) []string {
		t.Helper()
		before := map[string]int{}
		for _, v := range versions {
			before[v] = o.reg.RequestCount(fakeregistry.SumsPath("hashicorp", "foo", v))
		}
		if code, out := build(at, "--recheck=34%"); code != ExitOK {
			t.Fatalf("sampled recheck: exit %d\n%s", code, out)
		}
		var out []string
		for _, v := range versions {
			if o.reg.RequestCount(fakeregistry.SumsPath("hashicorp", "foo", v)) > before[v] {
				out = append(out, v)
			}
		}
		return out
	}
	day := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	for _, bad := range []string{"--recheck=0%", "--recheck=ten%", "--recheck=10"} {
		if code, out := build(day, bad); code != ExitUsage || !strings.Contains(out, "--recheck") {
			t.Errorf("build %s: exit %d, want %d naming --recheck\n%s", bad, code, ExitUsage, out)
		}
	}
	if code, out := build(day); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	// 34% is three nights: each version is checked on exactly one of any
	// three nights in a row.
	times := map[string]int{}
	for night := range 3 {
		at := day.Add(time.Duration(night+1) * 24 * time.Hour)
		got := checked(at)
		if len(got) == len(versions) {
			t.Errorf("night %d checked every version: %v", night+1, got)
		}
		if again := checked(at.Add(time.Hour)); !slices.Equal(again, got) {
			t.Errorf("night %d: a second run the same day checked %v, the first %v", night+1, again, got)
		}
		for _, v := range got {
			times[v]++
		}
	}
	for _, v := range versions {
		if times[v] != 1 {
			t.Errorf("%s was checked on %d of three nights, want one", v, times[v])
		}
	}
}
