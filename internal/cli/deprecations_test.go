package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// Deprecations carried through: the warnings a provider's version list
// gives (which clients print at init) are reported, kept in the tree,
// listed in catalog.json, shown on the page and served again by the
// registry replica; they go when the origin stops sending them.

// deprecationEvents returns the "deprecation" events of a --json output.
func deprecationEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var events []map[string]any
	for line := range strings.SplitSeq(out, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] == "deprecation" {
			events = append(events, ev)
		}
	}
	return events
}

// catalog reads the site's catalog.json.
func (o keysOrigin) catalog(t *testing.T) layout.Catalog {
	t.Helper()
	c, err := layout.DecodeCatalog(readFile(t, o.site(layout.CatalogPath)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// replicaWarnings reads the warnings of the replica's versions list of
// hashicorp/foo.
func (o keysOrigin) replicaWarnings(t *testing.T) []string {
	t.Helper()
	var doc regproto.Versions
	if err := json.Unmarshal(readFile(t, o.site(replica.VersionsPath(keysFoo))), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Versions) == 0 {
		t.Fatal("the replica lists no version of hashicorp/foo")
	}
	return doc.Warnings
}

func TestBuildCarriesDeprecations(t *testing.T) {
	o := newKeysOrigin(t, "1.0.0")
	o.manifest(t, ">= 1.0.0", "")
	// Hostile text: markup for the page, an escape sequence for a terminal.
	warnings := []string{"This provider is deprecated: use <b>acme/bar</b> instead.", "Archived on 2026-01-01.\x1b[2J"}
	o.reg.SetWarnings("hashicorp", "foo", warnings...)
	warningsFile := o.site(layout.WarningsPath(keysFoo))

	code, out := o.tfmirror(t, "build", "--json", "--registry-replica")
	events := deprecationEvents(t, out)
	if code != ExitOK || len(events) != 1 {
		t.Fatalf("build: exit %d, %d deprecation events; want 0 and one\n%s", code, len(events), out)
	}
	if ev := events[0]; field(ev, "provider") != keysFoo.String() || !strings.Contains(field(ev, "message"), `Archived on 2026-01-01.\x1b[2J`) {
		t.Errorf("deprecation event %v: want the provider and its warnings, escaped in the message", ev)
	}
	if got, _ := events[0]["warnings"].([]any); len(got) != 2 || got[0] != warnings[0] || got[1] != warnings[1] {
		t.Errorf("deprecation event warnings %v, want %q", events[0]["warnings"], warnings)
	}
	if c := o.catalog(t); !slices.Equal(c.Deprecations[keysFoo.String()], warnings) {
		t.Errorf("catalog.json deprecations %q, want %q", c.Deprecations, warnings)
	}
	if got := o.replicaWarnings(t); !slices.Equal(got, warnings) {
		t.Errorf("the replica's versions list warns %q, want %q", got, warnings)
	}
	page := string(readFile(t, o.site(htmlcatalog.Path)))
	if !strings.Contains(page, `<li class="warning">This provider is deprecated: use &lt;b&gt;acme/bar&lt;/b&gt; instead.</li>`) {
		t.Errorf("the page does not show the warning, escaped\n%s", page)
	}

	// The same warnings: nothing is written.
	before := pruneFiles(t, o.site(""))
	time.Sleep(20 * time.Millisecond)
	code, out = o.tfmirror(t, "build", "--registry-replica")
	if code != ExitOK || !strings.Contains(out, "warning: "+keysFoo.String()+`: the registry warns: This provider is deprecated: use <b>acme/bar</b> instead.; Archived on 2026-01-01.\x1b[2J`) || strings.Contains(out, "\x1b") {
		t.Errorf("rebuild: exit %d; want 0 and a warning line with the escape sequence escaped\n%q", code, out)
	}
	pruneSame(t, "a rebuild with the same warnings", before, pruneFiles(t, o.site("")))

	// The origin stops warning: the mirror forgets.
	o.reg.SetWarnings("hashicorp", "foo")
	code, out = o.tfmirror(t, "build", "--json", "--registry-replica")
	if code != ExitOK || len(deprecationEvents(t, out)) != 0 {
		t.Fatalf("build without warnings: exit %d, want 0 and no deprecation event\n%s", code, out)
	}
	if _, err := os.Stat(warningsFile); !os.IsNotExist(err) {
		t.Errorf("%s after the origin stopped warning: %v, want it gone", warningsFile, err)
	}
	if c := o.catalog(t); c.Deprecations != nil {
		t.Errorf("catalog.json deprecations %q after the origin stopped warning", c.Deprecations)
	}
	if got := o.replicaWarnings(t); got != nil {
		t.Errorf("the replica still warns %q", got)
	}
	if page := string(readFile(t, o.site(htmlcatalog.Path))); strings.Contains(page, "deprecated") {
		t.Errorf("the page still shows the warning")
	}
}

// The keys that signed a provider's releases are in catalog.json and on
// the page, a key change marked with both fingerprints and the version
// that first had the new key; the same key re-issued is one key.
func TestCatalogShowsKeyChanges(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	a, b := pgptest.NewAt(t, "A", now.Add(-48*time.Hour), now.Add(30*24*time.Hour)), pgptest.New(t, "B")
	origin := continuityOrigin(t, a)
	origin.signWith(t, "3.0.0", b, time.Time{}, b)
	o := holdFirstTwo(t, origin, a)
	if s := o.catalog(t).Signers[keysFoo.String()]; len(s) != 1 || s[0].Fingerprint != a.Fingerprint || s[0].FirstVersion != "1.0.0" || s[0].LastVersion != "2.0.0" || s[0].Releases != 2 || s[0].Replaced != "" {
		t.Errorf("catalog.json signers before the change: %+v, want A for 1.0.0 to 2.0.0", s)
	}
	o.manifest(t, ">= 1.0.0", "")
	if code, out := o.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	s := o.catalog(t).Signers[keysFoo.String()]
	if len(s) != 2 || s[1].KeyID != b.ID || s[1].Fingerprint != b.Fingerprint || s[1].FirstVersion != "3.0.0" || s[1].Replaced != a.Fingerprint || s[0].LastVersion != "2.0.0" {
		t.Fatalf("catalog.json signers after the change: %+v, want A (1.0.0 to 2.0.0), then B from 3.0.0 replacing A", s)
	}
	page := string(readFile(t, o.site(htmlcatalog.Path)))
	row := `new key from 3.0.0: <code class="hash">` + b.Fingerprint + `</code> replaced <code class="hash">` + a.Fingerprint + `</code>`
	if !strings.Contains(page, `<tr class="signer key-change" data-key="`+b.ID+`">`) || !strings.Contains(page, row) {
		t.Errorf("the page does not mark the key change with both fingerprints\n%s", page)
	}

	// A re-issue of A with a later expiry is not a change.
	origin = continuityOrigin(t, a)
	origin.signWith(t, "3.0.0", a.Reissue(t, now.Add(-time.Hour), now.Add(365*24*time.Hour)), time.Time{}, a)
	o = holdFirstTwo(t, origin, a)
	o.manifest(t, ">= 1.0.0", "")
	if code, out := o.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	if s := o.catalog(t).Signers[keysFoo.String()]; len(s) != 1 || s[0].Releases != 3 || s[0].LastVersion != "3.0.0" {
		t.Errorf("catalog.json signers after a re-issue: %+v, want one key for three releases", s)
	}
	if page := string(readFile(t, o.site(htmlcatalog.Path))); strings.Contains(page, "key-change") {
		t.Errorf("the page marks a re-issued key as a change")
	}
}

// A build from a mirror tfmirror wrote carries the warnings that mirror
// keeps (its catalog.json's deprecations), as a build from the origin
// does: a chain of mirrors shows what the origin said. A mirror that
// keeps no catalog says nothing of warnings, so the copy keeps its own.
func TestBuildFromAMirrorCarriesDeprecations(t *testing.T) {
	o := newKeysOrigin(t, "1.0.0")
	o.manifest(t, ">= 1.0.0", "")
	warnings := []string{"This provider is deprecated: use acme/bar instead."}
	o.reg.SetWarnings("hashicorp", "foo", warnings...)
	copyWarnings := func() []string {
		t.Helper()
		tree, err := layout.OpenExisting(filepath.Join(o.dir, "copy"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := tree.ReadWarnings(t.Context(), keysFoo)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if code, out := o.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	code, out := o.tfmirror(t, "build", "--from", "site", "--out", "copy", "--json")
	if events := deprecationEvents(t, out); code != ExitOK || len(events) != 1 || field(events[0], "provider") != keysFoo.String() {
		t.Fatalf("build --from the mirror: exit %d, deprecation events %v; want 0 and one for %s\n%s", code, events, keysFoo, out)
	}
	if got := copyWarnings(); !slices.Equal(got, warnings) {
		t.Errorf("the copy keeps %q, want %q", got, warnings)
	}

	// The upstream has no catalog (as a mirror another tool made): the
	// copy keeps what it had.
	catalog := o.site(layout.CatalogPath)
	data := readFile(t, catalog)
	if err := os.Remove(catalog); err != nil {
		t.Fatal(err)
	}
	if code, out := o.tfmirror(t, "build", "--from", "site", "--out", "copy"); code != ExitOK || strings.Contains(out, "the registry warns") {
		t.Fatalf("build --from a mirror without a catalog: exit %d; want 0 and no warning\n%s", code, out)
	}
	if got := copyWarnings(); !slices.Equal(got, warnings) {
		t.Errorf("the copy keeps %q after a build from a mirror that says nothing of warnings, want %q", got, warnings)
	}
	if err := os.WriteFile(catalog, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// The origin stops warning; the upstream forgets, and so does the copy.
	o.reg.SetWarnings("hashicorp", "foo")
	if code, out := o.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	if code, out := o.tfmirror(t, "build", "--from", "site", "--out", "copy"); code != ExitOK {
		t.Fatalf("build --from the mirror: exit %d\n%s", code, out)
	}
	if got := copyWarnings(); got != nil {
		t.Errorf("the copy still keeps %q", got)
	}
}
