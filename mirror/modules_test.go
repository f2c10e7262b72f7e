package mirror

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// fakeModules is an in-memory module registry and fetcher: a location is
// "mem:NAME" and fetching it writes files[NAME]. A package's file CALLS
// lists the registry modules it calls, one "ADDRESS CONSTRAINT" a line.
type fakeModules struct {
	mu       sync.Mutex
	versions map[string][]string          // module → versions
	files    map[string]map[string]string // location name → path → content
	subdirs  map[string]string            // location name → subdir
	fetches  int
}

func newFakeModules() *fakeModules {
	return &fakeModules{versions: map[string][]string{}, files: map[string]map[string]string{}, subdirs: map[string]string{}}
}

func (f *fakeModules) add(module, version string, files map[string]string) {
	m := addrs.MustParseModule(module)
	f.versions[m.String()] = append(f.versions[m.String()], version)
	f.files[m.String()+"@"+version] = files
}

func (f *fakeModules) ModuleVersions(_ context.Context, m addrs.Module) (addrs.VersionList, error) {
	var out addrs.VersionList
	for _, s := range f.versions[m.String()] {
		out = append(out, addrs.MustParseVersion(s))
	}
	if out == nil {
		return nil, fmt.Errorf("no such module: %w", ErrModuleUnknown)
	}
	return out, nil
}

func (f *fakeModules) ModuleLocation(_ context.Context, m addrs.Module, v addrs.Version) (ModuleLocation, error) {
	return ModuleLocation{Location: "mem:" + m.String() + "@" + v.String(), Registry: m.Host}, nil
}

func (f *fakeModules) FetchModule(_ context.Context, loc ModuleLocation, dir string) (ModuleFetch, error) {
	location := loc.Location
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches++
	name := strings.TrimPrefix(location, "mem:")
	for rel, body := range f.files[name] {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return ModuleFetch{}, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return ModuleFetch{}, err
		}
	}
	return ModuleFetch{Subdir: f.subdirs[name], Source: location, Commit: fmt.Sprintf("%040x", len(f.files[name]))}, nil
}

func (f *fakeModules) ModuleCalls(root, subdir string) ([]ModuleRequirement, []string, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(subdir), "CALLS"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	var out []ModuleRequirement
	for line := range strings.Lines(string(data)) {
		addr, cons, _ := strings.Cut(strings.TrimSpace(line), " ")
		out = append(out, ModuleRequirement{Module: addrs.MustParseModule(addr), Constraint: cons})
	}
	return out, nil, err
}

func buildModules(t *testing.T, root string, f *fakeModules, recheck, dryRun bool, reqs ...ModuleRequirement) *Report {
	t.Helper()
	tree, err := layout.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &ModuleBuilder{Source: f, Fetcher: f, Calls: f, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Recheck: Recheck{Percent: map[bool]int{true: 100}[recheck]}, DryRun: dryRun}
	r := &Report{}
	b.Build(context.Background(), reqs, r)
	return r
}

func moduleStatuses(r *Report) []string {
	var out []string
	for _, res := range r.Modules {
		out = append(out, fmt.Sprintf("%s %s %s", res.Module.ForDisplay(), res.Version, res.Status))
	}
	return out
}

func TestModuleBuildIsTransitiveAndIncremental(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "# net 1.0.0"})
	f.add("acme/net/aws", "1.1.0", map[string]string{"main.tf": "# net 1.1.0", "CALLS": "acme/sub/aws ~> 2.0\n"})
	f.add("acme/net/aws", "2.0.0-beta1", map[string]string{"main.tf": "# beta"})
	f.add("acme/sub/aws", "2.0.0", map[string]string{"main.tf": "# sub 2.0.0"})
	f.add("acme/sub/aws", "2.1.0", map[string]string{"main.tf": "# sub 2.1.0"})
	f.add("acme/sub/aws", "3.0.0", map[string]string{"main.tf": "# sub 3.0.0"})
	root := t.TempDir()
	req := ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Constraint: ">= 1.0"}

	r := buildModules(t, root, f, false, false, req)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"acme/net/aws 1.0.0 mirrored", "acme/net/aws 1.1.0 mirrored", "acme/sub/aws 2.1.0 mirrored"}
	if got := moduleStatuses(r); !slices.Equal(got, want) {
		t.Fatalf("first build: %q, want %q", got, want)
	}
	tree, err := layout.OpenExisting(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mods, err := tree.Modules(ctx)
	if err != nil || len(mods) != 2 {
		t.Fatalf("catalog modules: %v %v", mods, err)
	}
	rec, err := tree.ReadModuleRecord(ctx, addrs.MustParseModule("acme/net/aws"), addrs.MustParseVersion("1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Calls) != 1 || rec.Calls[0].Module != "registry.opentofu.org/acme/sub/aws" || rec.Calls[0].Version != "~> 2.0" {
		t.Fatalf("record calls: %+v", rec.Calls)
	}
	archive := filepath.Join(root, layout.ModuleArchivePath(addrs.MustParseModule("acme/net/aws"), addrs.MustParseVersion("1.1.0")))
	before, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}

	// A second run fetches nothing and still walks the calls, from the
	// records.
	fetches := f.fetches
	r = buildModules(t, root, f, false, false, req)
	want = []string{"acme/net/aws 1.0.0 present", "acme/net/aws 1.1.0 present", "acme/sub/aws 2.1.0 present"}
	if got := moduleStatuses(r); !slices.Equal(got, want) || r.Err() != nil || f.fetches != fetches {
		t.Fatalf("second build: %q (err %v, %d fetches), want %q and none", got, r.Err(), f.fetches-fetches, want)
	}

	// The upstream moves 1.1.0 to other content: a recheck reports it and
	// leaves the package as it was.
	f.files["registry.opentofu.org/acme/net/aws@1.1.0"]["main.tf"] = "# moved"
	r = buildModules(t, root, f, true, false, req)
	err = r.Err()
	if err == nil || !strings.Contains(err.Error(), "acme/net/aws 1.1.0") || !strings.Contains(err.Error(), "never replaces a published module version") {
		t.Fatalf("recheck after a moved tag: %v", err)
	}
	after, _ := os.ReadFile(archive)
	if string(after) != string(before) {
		t.Fatal("the published package changed")
	}

	// The module it calls moved too: the same recheck reports both, the
	// calls of the mirror's 1.1.0 being followed though its own recheck
	// failed.
	f.files["registry.opentofu.org/acme/sub/aws@2.1.0"]["main.tf"] = "# moved too"
	r = buildModules(t, root, f, true, false, req)
	err = r.Err()
	if err == nil || !strings.Contains(err.Error(), "acme/net/aws 1.1.0") || !strings.Contains(err.Error(), "acme/sub/aws 2.1.0") {
		t.Fatalf("recheck after both moved: %v, want both named", err)
	}
}

func TestModuleBuildIsByteIdentical(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "a", "modules/x/main.tf": "b", "CALLS": ""})
	req := ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1}
	a, b := t.TempDir(), t.TempDir()
	for _, root := range []string{a, b} {
		if err := buildModules(t, root, f, false, false, req).Err(); err != nil {
			t.Fatal(err)
		}
	}
	m, v := addrs.MustParseModule("acme/net/aws"), addrs.MustParseVersion("1.0.0")
	for _, rel := range []string{layout.ModuleArchivePath(m, v), layout.ModuleRecordPath(m, v), layout.ModuleIndexPath(m), layout.CatalogPath} {
		x, _ := os.ReadFile(filepath.Join(a, rel))
		y, _ := os.ReadFile(filepath.Join(b, rel))
		if len(x) == 0 || string(x) != string(y) {
			t.Errorf("%s differs between two builds", rel)
		}
	}
}

func TestModuleDryRunFetchesNothing(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "a"})
	root := t.TempDir()
	r := buildModules(t, root, f, false, true, ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1})
	if got := moduleStatuses(r); !slices.Equal(got, []string{"acme/net/aws 1.0.0 download"}) || f.fetches != 0 {
		t.Fatalf("dry run: %q, %d fetches", got, f.fetches)
	}
	if _, err := os.Stat(filepath.Join(root, layout.ModulesDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dry run wrote modules: %v", err)
	}
}

func TestModuleRequirementErrorsNameTheModule(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "a"})
	r := buildModules(t, t.TempDir(), f, false, false,
		ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Constraint: "~> 9.0", From: "mirror.hcl:3"},
		ModuleRequirement{Module: addrs.MustParseModule("acme/gone/aws"), Newest: 1})
	err := r.Err()
	for _, want := range []string{`module acme/net/aws: no version matches "~> 9.0"`, "mirror.hcl:3", "module acme/gone/aws: list versions"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

func TestSelectModuleVersions(t *testing.T) {
	var list addrs.VersionList
	for _, s := range []string{"1.0.0", "1.2.0", "1.2.5", "2.0.0-rc1", "2.0.0", "2.1.0-beta"} {
		list = append(list, addrs.MustParseVersion(s))
	}
	for _, tc := range []struct {
		cons   string
		newest int
		want   string
	}{
		{"~> 1.2", 0, "1.2.5 1.2.0"},
		{"", 1, "2.0.0"},
		{">= 1.0", 2, "2.0.0 1.2.5"},
		{"2.0.0-rc1", 0, "2.0.0-rc1"},
		{"= 2.1.0-beta", 0, "2.1.0-beta"},
	} {
		got, err := SelectModuleVersions(ModuleRequirement{Constraint: tc.cons, Newest: tc.newest}, list)
		var s []string
		for _, v := range got {
			s = append(s, v.String())
		}
		if err != nil || strings.Join(s, " ") != tc.want {
			t.Errorf("%q newest %d: %v %v, want %s", tc.cons, tc.newest, s, err, tc.want)
		}
	}
	if err := CheckModuleConstraint("~> 1.0, >= bad"); err == nil {
		t.Error("a bad constraint was accepted")
	}
}

func TestVerifyChecksModulePackages(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "a"})
	root := t.TempDir()
	if err := buildModules(t, root, f, false, false, ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1}).Err(); err != nil {
		t.Fatal(err)
	}
	verify := func() *VerifyReport {
		tree, err := layout.OpenExisting(root)
		if err != nil {
			t.Fatal(err)
		}
		r, err := (&Verifier{Mirror: tree}).Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := verify(); len(r.Problems) != 0 || r.Modules != 1 || r.ModuleVersions != 1 {
		t.Fatalf("a fresh mirror: %+v", r)
	}
	m, v := addrs.MustParseModule("acme/net/aws"), addrs.MustParseVersion("1.0.0")
	archive := filepath.Join(root, layout.ModuleArchivePath(m, v))

	// A package that is not the recorded bytes.
	if err := os.WriteFile(archive, []byte("not the package"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := verify(); len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, "the record says") {
		t.Fatalf("a replaced package: %+v", r.Problems)
	}

	// A package whose record matches but that would escape its directory.
	hostile := zipWith(t, "../escape.tf", "x")
	if err := os.WriteFile(archive, hostile, 0o644); err != nil {
		t.Fatal(err)
	}
	recPath := filepath.Join(root, layout.ModuleRecordPath(m, v))
	rec, err := layout.DecodeModuleRecord([]byte(readFile(t, recPath)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(hostile)
	rec.SHA256, rec.Size = hex.EncodeToString(sum[:]), int64(len(hostile))
	data, _ := layout.Encode(rec)
	if err := os.WriteFile(recPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := verify(); len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, "escape") {
		t.Fatalf("an escaping package: %+v", r.Problems)
	}
}

func zipWith(t *testing.T, name, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err == nil {
		_, err = w.Write([]byte(body))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestModuleRegistryIsFilledFromTheTree(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "a"})
	root := t.TempDir()
	reg := &memRegistry{}
	build := func() *Report {
		tree, err := layout.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer tree.Close()
		b := &ModuleBuilder{Source: f, Fetcher: f, Calls: f, Dests: []Destination{tree.Destination(), reg}, Work: tree.Workspace}
		r := &Report{}
		b.Build(context.Background(), []ModuleRequirement{{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1}}, r)
		return r
	}
	if r := build(); r.Err() != nil || len(reg.modules) != 1 {
		t.Fatalf("first build: %v, registry %v", r.Err(), reg.modules)
	}
	clear(reg.modules)
	fetches := f.fetches
	r := build()
	if got := moduleStatuses(r); r.Err() != nil || !slices.Equal(got, []string{"acme/net/aws 1.0.0 mirrored"}) || len(reg.modules) != 1 || f.fetches != fetches {
		t.Fatalf("a registry that lost the package: %q %v, registry %v, %d fetches; want it pushed again from the tree without fetching", got, r.Err(), reg.modules, f.fetches-fetches)
	}
	if got := moduleStatuses(build()); !slices.Equal(got, []string{"acme/net/aws 1.0.0 present"}) {
		t.Fatalf("third build: %q", got)
	}
}

func TestModuleCooldown(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "a"})
	root := t.TempDir()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cd := NewCooldown(nil, func() time.Time { return now })
	build := func() *Report {
		tree, err := layout.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer tree.Close()
		b := &ModuleBuilder{Source: f, Fetcher: f, Calls: f, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Cooldown: cd}
		r := &Report{}
		b.Build(context.Background(), []ModuleRequirement{{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1, MinAge: 48 * time.Hour}}, r)
		return r
	}
	r := build()
	if len(r.Modules) != 0 || r.Err() != nil || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "held back until 2026-11-03T00:00:00Z") {
		t.Fatalf("a version first seen now: %+v", r)
	}
	now = now.Add(49 * time.Hour)
	if got := moduleStatuses(build()); !slices.Equal(got, []string{"acme/net/aws 1.0.0 mirrored"}) {
		t.Fatalf("two days later: %q", got)
	}
	if seen, added := cd.Seen(); !added || len(seen) != 1 {
		t.Fatalf("first-seen times: %v %v", seen, added)
	}
}

// OnResult is called one call at a time, as Options.OnEvent is for
// providers, though module versions are fetched concurrently: a printer
// behind it writes to one stream.
func TestModuleResultsAreSerialized(t *testing.T) {
	f := newFakeModules()
	for i := range 8 {
		f.add("acme/net/aws", fmt.Sprintf("1.%d.0", i), map[string]string{"main.tf": fmt.Sprintf("# net 1.%d.0", i)})
	}
	tree, err := layout.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	var inside, overlaps, calls atomic.Int32
	b := &ModuleBuilder{Source: f, Fetcher: f, Calls: f, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Parallel: 8,
		OnResult: func(ModuleResult) {
			calls.Add(1)
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(50 * time.Millisecond) // long enough for other versions to be published meanwhile
			inside.Add(-1)
		}}
	r := &Report{}
	b.Build(context.Background(), []ModuleRequirement{{Module: addrs.MustParseModule("acme/net/aws"), Constraint: ">= 1.0"}}, r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 8 || overlaps.Load() != 0 {
		t.Errorf("OnResult called %d times, %d of them while another call ran; want 8 and none", calls.Load(), overlaps.Load())
	}
}
