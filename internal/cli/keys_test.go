package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// Signing keys change shape over time without changing identity: a
// rotation (a new key signs new releases), a re-issue (the same key given
// a later expiry by a new self-signature) and a key that has expired. The
// keys are made in the test; the fake registry advertises them and serves
// their signatures (fakeregistry.SignWith).

var keysFoo = addrs.MustParseProvider("hashicorp/foo")

// keysOrigin is a registry with releases of hashicorp/foo for linux_amd64
// and the directory a build runs in.
type keysOrigin struct {
	origin
	dir string
}

func newKeysOrigin(t *testing.T, versions ...string) keysOrigin {
	t.Helper()
	o := keysOrigin{origin: newOrigin(t), dir: t.TempDir()}
	for _, v := range versions {
		o.reg.Add("hashicorp", "foo", v, "linux_amd64")
	}
	return o
}

// signWith makes version v signed by k as of at (zero: now), advertising
// keys.
func (o keysOrigin) signWith(t *testing.T, v string, k pgptest.Key, at time.Time, keys ...pgptest.Key) []byte {
	t.Helper()
	var sig []byte
	o.reg.SignWith("hashicorp", "foo", v, func(sums []byte) []byte {
		if at.IsZero() {
			sig = k.Sign(t, sums)
		} else {
			sig = k.SignAt(t, sums, at)
		}
		return sig
	}, armoredOf(keys)...)
	return sig
}

func armoredOf(keys []pgptest.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Armored
	}
	return out
}

// manifest writes mirror.hcl: the versions of hashicorp/foo and a trust
// "*" block with body.
func (o keysOrigin) manifest(t *testing.T, versions, trust string) {
	t.Helper()
	writeManifest(t, o.dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "`+versions+`" }
trust "*" {
`+trust+`
}
`+o.hostBlock("registry.opentofu.org"))
}

// tfmirror runs a command in the build's directory and returns its exit
// code and its whole output.
func (o keysOrigin) tfmirror(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, stdout, stderr := o.run(t, o.dir, args...)
	return code, "$ tfmirror " + strings.Join(args, " ") + "\n" + stdout + stderr
}

func (o keysOrigin) site(rel string) string {
	return filepath.Join(o.dir, "site", filepath.FromSlash(rel))
}

func (o keysOrigin) provenance(t *testing.T, site, v string) layout.Provenance {
	t.Helper()
	rel := layout.ProvenancePath(keysFoo, addrs.MustParseVersion(v))
	prov, err := layout.DecodeProvenance(readFile(t, filepath.Join(o.dir, site, filepath.FromSlash(rel))))
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

func (o keysOrigin) published(site, v string) bool {
	_, err := os.Stat(filepath.Join(o.dir, site, filepath.FromSlash(layout.VersionPath(keysFoo, addrs.MustParseVersion(v)))))
	return err == nil
}

// expiryText is how a warning or refusal names when a key expired.
func expiryText(k pgptest.Key, at time.Time) string {
	return "signed by key " + k.ID + ", which expired on " + at.UTC().Format(time.DateTime) + " UTC"
}

func TestBuildAcrossAKeyRotation(t *testing.T) {
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	o := newKeysOrigin(t, "1.0.0", "2.0.0")
	o.signWith(t, "1.0.0", a, time.Time{}, a)
	o.signWith(t, "2.0.0", b, time.Time{}, a, b) // the registry lists both keys for the new release

	for _, tt := range []struct {
		name      string
		keyIDs    []string
		published []string
		refused   map[string]pgptest.Key // version: the key refused
	}{
		{"both keys allowed", []string{a.ID, b.Fingerprint}, []string{"1.0.0", "2.0.0"}, nil},
		{"only the new key allowed", []string{b.ID}, []string{"2.0.0"}, map[string]pgptest.Key{"1.0.0": a}},
		{"only the old key allowed", []string{a.Fingerprint}, []string{"1.0.0"}, map[string]pgptest.Key{"2.0.0": b}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := keysOrigin{origin: o.origin, dir: t.TempDir()}
			o.manifest(t, ">= 1.0.0", `key_ids = ["`+strings.Join(tt.keyIDs, `", "`)+`"]`)
			code, out := o.tfmirror(t, "build")
			want := map[bool]int{true: ExitOK, false: ExitVerification}[len(tt.refused) == 0]
			if code != want {
				t.Fatalf("exit %d, want %d\n%s", code, want, out)
			}
			signer := map[string]pgptest.Key{"1.0.0": a, "2.0.0": b}
			for _, v := range []string{"1.0.0", "2.0.0"} {
				if !slices.Contains(tt.published, v) {
					if o.published("site", v) {
						t.Errorf("%s was published, though signed by a key the policy does not allow", v)
					}
					continue
				}
				if got := o.provenance(t, "site", v).KeyID; got != signer[v].ID {
					t.Errorf("%s recorded as verified by %q, want %s", v, got, signer[v].ID)
				}
			}
			for v, k := range tt.refused {
				if !strings.Contains(out, keysFoo.String()+" "+v) || !strings.Contains(out, "signed by key "+k.ID+", which the trust policy") {
					t.Errorf("the refusal of %s does not name it and key %s:\n%s", v, k.ID, out)
				}
			}
			if code, out := o.tfmirror(t, "verify", "site"); code != ExitOK {
				t.Errorf("verify: exit %d\n%s", code, out)
			}
		})
	}
}

// reissue is key K over time, as HashiCorp's was in 2026: made two years
// ago, expiring 30 days ago (T1) in its first form, which signed 1.0.0 a
// year before that; re-issued a day ago (same key, a new self-signature)
// to expire in a year (T2); the re-issued form signs 2.0.0.
type reissue struct {
	old, current pgptest.Key
	t1, t2       time.Time
	madeOld      time.Time // when 1.0.0 was signed
}

func newReissue(t *testing.T) reissue {
	now := time.Now().Truncate(time.Second)
	made := now.Add(-2 * 365 * 24 * time.Hour)
	r := reissue{t1: now.Add(-30 * 24 * time.Hour), t2: now.Add(365 * 24 * time.Hour), madeOld: made.Add(24 * time.Hour)}
	r.old = pgptest.NewAt(t, "K", made, r.t1)
	r.current = r.old.Reissue(t, now.Add(-24*time.Hour), r.t2)
	return r
}

func TestRebuildAfterAKeyReissue(t *testing.T) {
	r := newReissue(t)
	o := newKeysOrigin(t, "1.0.0", "2.0.0")
	trust := `key_ids = ["` + r.old.ID + `"]`

	// Before the re-issue: the registry serves K's first form for 1.0.0,
	// which the mirror keeps. It has expired since: a warning says when.
	sig1 := o.signWith(t, "1.0.0", r.old, r.madeOld, r.old)
	o.manifest(t, "1.0.0", trust)
	code, out := o.tfmirror(t, "build")
	if code != ExitOK || !strings.Contains(out, expiryText(r.old, r.t1)) {
		t.Fatalf("build before the re-issue: exit %d, want 0 and a warning %q\n%s", code, expiryText(r.old, r.t1), out)
	}
	prov1 := readFile(t, o.site(layout.ProvenancePath(keysFoo, addrs.MustParseVersion("1.0.0"))))

	// The re-issue: the registry serves the re-issued K for 1.0.0 (with
	// the same signature) and for 2.0.0, which it signs.
	o.reg.SignWith("hashicorp", "foo", "1.0.0", func([]byte) []byte { return sig1 }, r.current.Armored)
	o.signWith(t, "2.0.0", r.current, time.Time{}, r.current)
	o.manifest(t, ">= 1.0.0", trust)
	archive1 := fakeregistry.ArchivePath("hashicorp", "foo", "1.0.0", "linux_amd64")
	served := o.reg.BytesServed(archive1)
	code, out = o.tfmirror(t, "build")
	if code != ExitOK || !strings.Contains(out, "1 mirrored, 1 already present") || strings.Contains(out, "expired") {
		t.Fatalf("rebuild after the re-issue: exit %d, want 0, 1.0.0 kept and no expiry warning\n%s", code, out)
	}
	if got := o.reg.BytesServed(archive1) - served; got != 0 {
		t.Errorf("the rebuild downloaded 1.0.0's archive again (%d bytes)", got)
	}
	if got := readFile(t, o.site(layout.ProvenancePath(keysFoo, addrs.MustParseVersion("1.0.0")))); string(got) != string(prov1) {
		t.Errorf("the rebuild rewrote 1.0.0's provenance:\n%s\nwas\n%s", got, prov1)
	}
	if prov := o.provenance(t, "site", "2.0.0"); prov.KeyID != r.old.ID || !slices.Equal(prov.SigningKeys, []string{r.current.Armored}) {
		t.Errorf("2.0.0 recorded as verified by %q with %d keys, want %s with the re-issued form", prov.KeyID, len(prov.SigningKeys), r.old.ID)
	}
	if code, out := o.tfmirror(t, "build"); code != ExitOK || !strings.Contains(out, "0 mirrored, 2 already present") {
		t.Errorf("second rebuild: exit %d, want a no-op\n%s", code, out)
	}

	// A mirror built after the re-issue keeps only the re-issued form: the
	// signature K made before its first expiry verifies, unexpired.
	code, out = o.tfmirror(t, "build", "--out", "site-new")
	if code != ExitOK || strings.Contains(out, "expired") {
		t.Fatalf("build after the re-issue: exit %d, want 0 without an expiry warning\n%s", code, out)
	}
	if prov := o.provenance(t, "site-new", "1.0.0"); prov.KeyID != r.old.ID {
		t.Errorf("1.0.0 recorded as verified by %q, want %s", prov.KeyID, r.old.ID)
	}

	// verify, lock and replica take a mirror holding either form.
	for _, site := range []string{"site", "site-new"} {
		if code, out := o.tfmirror(t, "verify", site); code != ExitOK {
			t.Errorf("verify %s: exit %d\n%s", site, code, out)
		}
		for _, v := range []string{"1.0.0", "2.0.0"} {
			module := filepath.Join(o.dir, site+"-module-"+v)
			if err := os.MkdirAll(module, 0o755); err != nil {
				t.Fatal(err)
			}
			main := `terraform {
  required_providers {
    foo = { source = "hashicorp/foo", version = "` + v + `" }
  }
}
`
			if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(main), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := o.run(t, module, "lock", "--mirror", filepath.Join(o.dir, site), "--config", filepath.Join(o.dir, "mirror.hcl"), "--platform", "linux_amd64")
			if _, err := os.Stat(filepath.Join(module, ".terraform.lock.hcl")); code != ExitOK || err != nil {
				t.Errorf("lock %s from %s: exit %d, lock file: %v\n%s%s", v, site, code, err, stdout, stderr)
			}
		}
		if code, out := o.tfmirror(t, "replica", site); code != ExitOK {
			t.Errorf("replica %s: exit %d\n%s", site, code, out)
		}
		for _, v := range []string{"1.0.0", "2.0.0"} {
			rel := replica.DownloadPath(keysFoo, addrs.MustParseVersion(v), addrs.MustParsePlatform("linux_amd64"))
			if _, err := os.Stat(filepath.Join(o.dir, site, filepath.FromSlash(rel))); err != nil {
				t.Errorf("replica of %s does not offer %s: %v", site, v, err)
			}
		}
	}

	// A bundle of the mirror built after the re-issue goes into the one
	// built before: the same release, verified by the same key, whose
	// kept form differs, is no conflict (bundle import refuses every other
	// difference).
	bundle := filepath.Join(o.dir, "new.tar.gz")
	if code, out := o.tfmirror(t, "bundle", "create", "site-new", "--out", bundle); code != ExitOK {
		t.Fatalf("bundle create: exit %d\n%s", code, out)
	}
	if code, out := o.tfmirror(t, "bundle", "import", bundle, "--out", "site"); code != ExitOK {
		t.Errorf("bundle import of the re-issued form into the mirror keeping the first: exit %d\n%s", code, out)
	}
	if got := readFile(t, o.site(layout.ProvenancePath(keysFoo, addrs.MustParseVersion("1.0.0")))); string(got) != string(prov1) {
		t.Errorf("the import rewrote 1.0.0's provenance:\n%s\nwas\n%s", got, prov1)
	}
	if code, out := o.tfmirror(t, "verify", "site"); code != ExitOK {
		t.Errorf("verify after the import: exit %d\n%s", code, out)
	}

	// Under expired_keys = "refuse" the newest self-signature decides: K
	// is not expired, whether the registry serves its re-issued form alone
	// or both forms in one armored block, the first form first.
	both := pgptest.Armor(t, openpgp.PublicKeyType, func(w io.Writer) error {
		if err := r.old.Entity.Serialize(w); err != nil {
			return err
		}
		return r.current.Entity.Serialize(w)
	})
	o.manifest(t, ">= 1.0.0", trust+"\nexpired_keys = \"refuse\"")
	for site, keys := range map[string]string{"site-refuse-reissued": r.current.Armored, "site-refuse-both": both} {
		o.reg.SignWith("hashicorp", "foo", "1.0.0", func([]byte) []byte { return sig1 }, keys)
		if code, out := o.tfmirror(t, "build", "--out", site); code != ExitOK || strings.Contains(out, "expired") {
			t.Errorf("build into %s refusing expired keys: exit %d, want 0 without a word of expiry\n%s", site, code, out)
		}
		if code, out := o.tfmirror(t, "verify", site); code != ExitOK {
			t.Errorf("verify %s refusing expired keys: exit %d\n%s", site, code, out)
		}
	}
}

func TestBuildWithAnExpiredKey(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	made := now.Add(-30 * 24 * time.Hour)
	expires := made.Add(24 * time.Hour)
	k := pgptest.NewAt(t, "retired", made, expires)
	o := newKeysOrigin(t, "1.0.0")
	o.signWith(t, "1.0.0", k, made.Add(time.Hour), k)

	t.Run("warn", func(t *testing.T) {
		o := keysOrigin{origin: o.origin, dir: t.TempDir()}
		o.manifest(t, "1.0.0", `expired_keys = "warn"`)
		code, out := o.tfmirror(t, "build")
		if code != ExitOK || !strings.Contains(out, expiryText(k, expires)) || !o.published("site", "1.0.0") {
			t.Errorf("exit %d, want 0, 1.0.0 published and a warning %q\n%s", code, expiryText(k, expires), out)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		o := keysOrigin{origin: o.origin, dir: t.TempDir()}
		o.manifest(t, "1.0.0", `expired_keys = "refuse"`)
		code, out := o.tfmirror(t, "build")
		if code != ExitVerification || !strings.Contains(out, expiryText(k, expires)) || o.published("site", "1.0.0") {
			t.Errorf("exit %d, want %d, nothing published and a refusal %q\n%s", code, ExitVerification, expiryText(k, expires), out)
		}
	})
}

// TestPlatformAddedAfterAKeyReissue: a platform added to a release kept
// from before the re-issue is authenticated with the re-issued form, which
// the release's provenance then keeps; what the mirror held stays.
func TestPlatformAddedAfterAKeyReissue(t *testing.T) {
	r := newReissue(t)
	o := keysOrigin{origin: newOrigin(t), dir: t.TempDir()}
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	sig1 := o.signWith(t, "1.0.0", r.old, r.madeOld, r.old)
	o.manifest(t, "1.0.0", `expired_keys = "warn"`)
	if code, out := o.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build before the re-issue: exit %d\n%s", code, out)
	}
	linux := readFile(t, o.site(layout.ArchivePath(keysFoo, addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64"))))

	o.reg.SignWith("hashicorp", "foo", "1.0.0", func([]byte) []byte { return sig1 }, r.current.Armored)
	writeManifest(t, o.dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
trust "*" {
  expired_keys = "refuse"
}
`+o.hostBlock("registry.opentofu.org"))
	code, out := o.tfmirror(t, "build")
	if code != ExitOK || !strings.Contains(out, "1 mirrored, 1 already present") || strings.Contains(out, "expired") {
		t.Fatalf("build adding darwin_arm64 after the re-issue: exit %d, want 0, one package added, no word of expiry\n%s", code, out)
	}
	prov := o.provenance(t, "site", "1.0.0")
	if prov.KeyID != r.old.ID || !slices.Equal(prov.SigningKeys, []string{r.current.Armored}) || len(prov.Archives) != 2 {
		t.Errorf("1.0.0's provenance: key %q, %d keys, %d archives; want %s, the re-issued form, both platforms", prov.KeyID, len(prov.SigningKeys), len(prov.Archives), r.old.ID)
	}
	if got := readFile(t, o.site(layout.ArchivePath(keysFoo, addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")))); string(got) != string(linux) {
		t.Error("the linux_amd64 archive changed")
	}
	if got := readFile(t, o.site(layout.SignaturePath(keysFoo, addrs.MustParseVersion("1.0.0")))); string(got) != string(sig1) {
		t.Error("the kept signature changed")
	}
	if code, out := o.tfmirror(t, "verify", "site"); code != ExitOK || strings.Contains(out, "expired") {
		t.Errorf("verify refusing expired keys: exit %d\n%s", code, out)
	}
}
