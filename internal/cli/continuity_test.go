package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// Key continuity: a nightly build compares the key that signed a new
// release with the keys that signed the provider's releases the mirror
// already holds. 1.0.0 and 2.0.0 are signed by key A and mirrored first;
// then 3.0.0 arrives, signed by another key or by A in another form.

// signingKeyEvents returns the "signing_key" events of a --json output.
func signingKeyEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var events []map[string]any
	for line := range strings.SplitSeq(out, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] == "signing_key" {
			events = append(events, ev)
		}
	}
	return events
}

// field reads a nested field of a JSON event, "" when absent.
func field(ev map[string]any, path ...string) string {
	var v any = ev
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

// continuityOrigin is hashicorp/foo 1.0.0 and 2.0.0 signed by a, and a
// directory whose mirror already holds them; the build of them said, in
// JSON, that each was the first the mirror held.
func continuityOrigin(t *testing.T, a pgptest.Key) keysOrigin {
	t.Helper()
	o := newKeysOrigin(t, "1.0.0", "2.0.0", "3.0.0")
	o.signWith(t, "1.0.0", a, time.Time{}, a)
	o.signWith(t, "2.0.0", a, time.Time{}, a)
	return o
}

// holdFirstTwo builds 1.0.0 and 2.0.0 into a new directory of o's origin
// and checks that the mirror said it had nothing to compare their key
// with.
func holdFirstTwo(t *testing.T, o keysOrigin, a pgptest.Key) keysOrigin {
	t.Helper()
	o = keysOrigin{origin: o.origin, dir: t.TempDir()}
	o.manifest(t, "< 3.0.0", "")
	code, out := o.tfmirror(t, "build", "--json")
	if code != ExitOK {
		t.Fatalf("build of 1.0.0 and 2.0.0: exit %d\n%s", code, out)
	}
	events := signingKeyEvents(t, out)
	if len(events) != 2 {
		t.Fatalf("build of a new mirror: %d signing_key events, want one per release\n%s", len(events), out)
	}
	for _, ev := range events {
		if field(ev, "status") != "first" || field(ev, "key", "fingerprint") != a.Fingerprint ||
			!strings.Contains(field(ev, "message"), "holds no signed release") {
			t.Errorf("first releases: event %v, want status first, key %s and a message that there is nothing to compare with", ev, a.Fingerprint)
		}
	}
	return o
}

func TestBuildComparesSigningKeysWithTheMirror(t *testing.T) {
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	origin := continuityOrigin(t, a)
	origin.signWith(t, "3.0.0", b, time.Time{}, b)

	t.Run("first releases, for people", func(t *testing.T) {
		o := keysOrigin{origin: origin.origin, dir: t.TempDir()}
		o.manifest(t, "< 3.0.0", "")
		if code, out := o.tfmirror(t, "build"); code != ExitOK || strings.Contains(out, "holds no signed release") {
			t.Errorf("build: exit %d, want 0 and no word of first releases without --verbose\n%s", code, out)
		}
		o = keysOrigin{origin: origin.origin, dir: t.TempDir()}
		o.manifest(t, "< 3.0.0", "")
		code, out := o.tfmirror(t, "build", "--verbose")
		if code != ExitOK || strings.Count(out, "the mirror holds no signed release of "+keysFoo.String()+" to compare its key with") != 2 {
			t.Errorf("build --verbose: exit %d, want 0 and a line for each first release\n%s", code, out)
		}
	})
	t.Run("warn", func(t *testing.T) {
		o := holdFirstTwo(t, origin, a)
		o.manifest(t, ">= 1.0.0", "")
		code, out := o.tfmirror(t, "build")
		if code != ExitOK || !o.published("site", "3.0.0") {
			t.Fatalf("exit %d, want 0 and 3.0.0 published\n%s", code, out)
		}
		if !strings.Contains(out, keysFoo.String()+" 3.0.0: signed by another key than the releases the mirror holds") || !strings.Contains(out, b.Fingerprint) || !strings.Contains(out, a.Fingerprint) ||
			!strings.Contains(out, `key_change = "refuse"`) {
			t.Errorf("the key change is not reported with both fingerprints and the setting that refuses it\n%s", out)
		}
		rec := newestRecord(t, filepath.Join(o.dir, "site"))
		if len(rec.KeyChanges) != 1 || rec.KeyChanges[0] != (layout.KeyChange{
			Package: keysFoo.String() + " 3.0.0", Status: "changed", KeyID: b.ID, Fingerprint: b.Fingerprint,
			PreviousVersion: "2.0.0", PreviousKeyID: a.ID, PreviousFingerprint: a.Fingerprint,
		}) {
			t.Errorf("the change record's key changes: %+v", rec.KeyChanges)
		}
		if code, out := o.tfmirror(t, "build"); code != ExitOK || strings.Contains(out, "another key") {
			t.Errorf("a rebuild that adds nothing: exit %d, want 0 and no word of a key change\n%s", code, out)
		}
	})
	t.Run("warn json", func(t *testing.T) {
		o := holdFirstTwo(t, origin, a)
		o.manifest(t, ">= 1.0.0", `key_change = "warn"`)
		code, out := o.tfmirror(t, "build", "--json")
		events := signingKeyEvents(t, out)
		if code != ExitOK || len(events) != 1 {
			t.Fatalf("exit %d, %d signing_key events; want 0 and one\n%s", code, len(events), out)
		}
		ev := events[0]
		if field(ev, "status") != "changed" || field(ev, "version") != "3.0.0" || field(ev, "key", "key_id") != b.ID ||
			field(ev, "key", "fingerprint") != b.Fingerprint || field(ev, "previous", "version") != "2.0.0" ||
			field(ev, "previous", "key", "fingerprint") != a.Fingerprint || field(ev, "key", "created") == "" {
			t.Errorf("signing_key event %v, want 3.0.0 changed from A (2.0.0) to B", ev)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		o := holdFirstTwo(t, origin, a)
		o.manifest(t, ">= 1.0.0", `key_change = "refuse"`)
		code, out := o.tfmirror(t, "build")
		if code != ExitVerification || o.published("site", "3.0.0") {
			t.Fatalf("exit %d, want %d and 3.0.0 not published\n%s", code, ExitVerification, out)
		}
		if !strings.Contains(out, "hashicorp/foo 3.0.0") || !strings.Contains(out, b.Fingerprint) || !strings.Contains(out, a.Fingerprint) ||
			!strings.Contains(out, "accept_new_keys") {
			t.Errorf("the refusal does not name the release, both fingerprints and the setting that accepts the key\n%s", out)
		}
		rec := newestRecord(t, filepath.Join(o.dir, "site"))
		if len(rec.KeyChanges) != 1 || rec.KeyChanges[0].Status != "refused" || rec.KeyChanges[0].PreviousFingerprint != a.Fingerprint ||
			len(rec.Refused) == 0 || !strings.Contains(rec.Refused[0].Why, b.Fingerprint) || len(rec.Added) != 0 {
			t.Errorf("the change record of the refusal: %+v", rec)
		}
		if code, out := o.tfmirror(t, "verify", "site"); code != ExitOK {
			t.Errorf("verify after the refusal: exit %d\n%s", code, out)
		}
	})
	t.Run("accepted by id", func(t *testing.T) {
		o := holdFirstTwo(t, origin, a)
		o.manifest(t, ">= 1.0.0", `key_change = "refuse"
accept_new_keys = ["`+b.ID+`"]`)
		code, out := o.tfmirror(t, "build")
		if code != ExitOK || !o.published("site", "3.0.0") {
			t.Fatalf("exit %d, want 0 and 3.0.0 published\n%s", code, out)
		}
		if strings.Contains(out, "warnings:") || !strings.Contains(out, "the trust policy accepts the new key") {
			t.Errorf("a key change to an accepted key: want no warning, and a line that the policy accepts it\n%s", out)
		}
	})
}

func TestBuildKeepsTheSameKeyInAnotherForm(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	a := pgptest.NewAt(t, "A", now.Add(-48*time.Hour), now.Add(30*24*time.Hour))
	for name, form := range map[string]pgptest.Key{
		"re-issued with a later expiry": a.Reissue(t, now.Add(-time.Hour), now.Add(365*24*time.Hour)),
		"with a new signing subkey":     a.WithSigningSubkey(t, now.Add(-time.Hour)),
	} {
		t.Run(name, func(t *testing.T) {
			origin := continuityOrigin(t, a)
			sig := origin.signWith(t, "3.0.0", form, time.Time{}, form)
			o := holdFirstTwo(t, origin, a)
			o.manifest(t, ">= 1.0.0", `key_change = "refuse"`)
			code, out := o.tfmirror(t, "build", "--json")
			if code != ExitOK || !o.published("site", "3.0.0") || len(signingKeyEvents(t, out)) != 0 || strings.Contains(out, "another key") {
				t.Fatalf("exit %d, want 0, 3.0.0 published and no key change\n%s", code, out)
			}
			if form.Entity.PrimaryKey.KeyId != a.Entity.PrimaryKey.KeyId || len(sig) == 0 {
				t.Fatal("the test's key is not the same primary key")
			}
		})
	}
}

// bundle import and verify judge a release's key as a build does: against
// the destination's releases (import) and the mirror's releases of lower
// versions (verify), under the trust policy of the manifest.
func TestImportAndVerifyCompareSigningKeys(t *testing.T) {
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	origin := continuityOrigin(t, a)
	origin.signWith(t, "3.0.0", b, time.Time{}, b)

	// A mirror of 3.0.0 alone (its first release: nothing to compare),
	// carried in a bundle.
	upstream := keysOrigin{origin: origin.origin, dir: t.TempDir()}
	upstream.manifest(t, "= 3.0.0", "")
	if code, out := upstream.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build of 3.0.0: exit %d\n%s", code, out)
	}
	bundle := filepath.Join(t.TempDir(), "b.tar.gz")
	if code, out := upstream.tfmirror(t, "bundle", "create", "site", "--out", bundle); code != ExitOK {
		t.Fatalf("bundle create: exit %d\n%s", code, out)
	}

	t.Run("import refused", func(t *testing.T) {
		o := holdFirstTwo(t, origin, a)
		o.manifest(t, ">= 1.0.0", `key_change = "refuse"`)
		code, out := o.tfmirror(t, "bundle", "import", bundle, "--out", "site")
		if code != ExitVerification || o.published("site", "3.0.0") {
			t.Fatalf("import of a release by another key under key_change = refuse: exit %d, want %d and 3.0.0 not published\n%s", code, ExitVerification, out)
		}
		if !strings.Contains(out, "a key change, which the trust policy") || !strings.Contains(out, b.Fingerprint) || !strings.Contains(out, a.Fingerprint) {
			t.Errorf("the refusal does not say it is a key change, with both fingerprints\n%s", out)
		}
	})
	t.Run("import warned", func(t *testing.T) {
		o := holdFirstTwo(t, origin, a)
		o.manifest(t, ">= 1.0.0", "")
		code, out := o.tfmirror(t, "bundle", "import", bundle, "--out", "site")
		if code != ExitOK || !o.published("site", "3.0.0") || !strings.Contains(out, "3.0.0: signed by another key than the releases the mirror holds") {
			t.Fatalf("import under the default policy: exit %d, want 0, 3.0.0 published and the key change warned of\n%s", code, out)
		}
		t.Run("verify", func(t *testing.T) {
			code, out := o.tfmirror(t, "verify", "site")
			if code != ExitOK || !strings.Contains(out, "3.0.0: signed by another key") {
				t.Errorf("verify under the default policy: exit %d, want 0 and the key change warned of\n%s", code, out)
			}
			o.manifest(t, ">= 1.0.0", `key_change = "refuse"`)
			code, out = o.tfmirror(t, "verify", "site")
			if code != ExitVerification || !strings.Contains(out, "a key change, which the trust policy") {
				t.Errorf("verify under key_change = refuse: exit %d, want %d naming the key change\n%s", code, ExitVerification, out)
			}
			o.manifest(t, ">= 1.0.0", `key_change = "refuse"
accept_new_keys = ["`+b.ID+`"]`)
			if code, out = o.tfmirror(t, "verify", "site"); code != ExitOK || strings.Contains(out, "another key") {
				t.Errorf("verify with the new key accepted: exit %d, want 0 and no warning\n%s", code, out)
			}
		})
	})
}

// A signing build refused by the key policy still pins its own record of
// the refusal in the signed catalog: deleting it afterwards is a problem
// for verify --catalog-key, not a quiet rewrite of history.
func TestFailedSigningBuildPinsItsRecord(t *testing.T) {
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	origin := continuityOrigin(t, a)
	origin.signWith(t, "3.0.0", b, time.Time{}, b)
	o := holdFirstTwo(t, origin, a)
	private, public := pgptest.New(t, "operator").WriteFiles(t, t.TempDir(), "operator")
	if code, out := o.tfmirror(t, "build", "--sign-key", private); code != ExitOK {
		t.Fatalf("signing build: exit %d\n%s", code, out)
	}
	o.manifest(t, ">= 1.0.0", `key_change = "refuse"`)
	if code, out := o.tfmirror(t, "build", "--sign-key", private); code != ExitVerification {
		t.Fatalf("build refused by the key policy: exit %d, want %d\n%s", code, ExitVerification, out)
	}
	site := filepath.Join(o.dir, "site")
	refusal := changeIndex(t, site).Records[0]
	catalog, err := layout.DecodeCatalog(readFile(t, filepath.Join(site, layout.CatalogPath)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(catalog.Changes, layout.CatalogChange{Path: refusal.Path, SHA256: refusal.SHA256}) {
		t.Fatalf("catalog.json pins %+v, not the refusal's record %s", catalog.Changes, refusal.Path)
	}
	if code, out := o.tfmirror(t, "verify", "site", "--catalog-key", public); code != ExitOK || strings.Contains(out, "does not pin") {
		t.Errorf("verify --catalog-key after the refusal: exit %d, want 0 and every record pinned\n%s", code, out)
	}
}
