// Package desttest is the conformance suite of mirror.Destination: one
// set of checks that every destination a build publishes into (a tree in
// a directory or a bucket, an OCI registry, an OCI image layout) must
// pass, run by each implementation's own tests the way restic runs one
// suite against all of its backends, and layout/storetest against every
// layout.Store.
//
// An implementation describes itself in a Harness: how to make a fresh
// location, how to open independent writers over it (one of which can be
// made to fail at its n-th write into the backend, as if it crashed
// there), the writer lock where there is one, and how clients read the
// location. Tree is the Harness of a tree over any layout.Store. Run then
// checks, as clients see the destination (through mirror.Verifier and
// direct reads of what is listed): that what is published is held, that
// nothing is listed before its bytes are in place whatever write fails,
// that archives put ahead stay unseen, that publications merge, that
// conflicting content is refused, that concurrent writers both get
// listed, module packages, and that the output is deterministic.
//
// It does not test a store's own guarantees (layout/storetest does) nor
// how a build chooses what to publish (mirror's tests do). Only tests
// import it.
package desttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Harness is what an implementation of mirror.Destination gives the
// suite. A location is whatever string the implementation names one by
// (a directory, a bucket URI, a repository prefix); the suite only hands
// it back.
type Harness struct {
	// NewLocation makes a fresh, empty location for one test.
	NewLocation func(t *testing.T) string
	// Open opens a writer over loc, independent of every other writer
	// (its own store or client object, as another process opens it).
	// With failAt > 0, the failAt-th write the writer makes into the
	// backend (counted from 1) and every later one fail before they reach
	// it, as if the process had died making that write.
	Open func(t *testing.T, loc string, failAt int) Writer
	// Listed returns loc as clients read it: a layout.Tree, or the OCI
	// store (which must be told the providers to check).
	Listed func(t *testing.T, loc string) mirror.Listed
	// Snapshot returns what clients can read of loc's providers and
	// modules (those named, where the destination cannot list them), by
	// name, each with a digest of its bytes: a tree's files, a
	// registry's tags and the digests they name, an image layout's files.
	// Two locations given the same publications must give the same
	// snapshot.
	Snapshot func(t *testing.T, loc string, providers []addrs.Provider, modules []addrs.Module) map[string]string
	// ModuleRecords says whether the destination keeps module records
	// (HeldModule.Record): a tree does, a registry keeps the package
	// alone.
	ModuleRecords bool
	// Skip names the subtests the implementation is known to fail, as
	// t.Name() names them below Run's test ("ConcurrentWriters/versions"),
	// each with the reason, which starts "BUG: " and says what is wrong.
	// A name that is no subtest fails the suite.
	Skip map[string]string
}

// Writer is one writer of a location.
type Writer struct {
	mirror.Destination
	// Lock takes the lock the writer must hold to write, waiting up to
	// wait for the writers it excludes, as a build takes it: a tree's
	// Publish lock (exclusive in a directory, shared in a bucket). Nil
	// where there is none (OCI).
	Lock func(ctx context.Context, wait time.Duration) (unlock func() error, err error)
	// Failed counts the writes made to fail (Open's failAt); nil for a
	// writer that fails none.
	Failed func() int
}

// lockWait bounds how long a writer waits for another's lock.
const lockWait = time.Minute

// Run runs the suite against h, each check as a subtest.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h, root: t.Name(), listed: map[string]mirror.Listed{}, seen: map[string]bool{}}
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"HeldAfterPublish", s.testHeld},
		{"PublishOrder", s.testPublishOrder},
		{"ArchivesAhead", s.testAhead},
		{"Merge", s.testMerge},
		{"SBOM", s.testSBOM},
		{"Conflict", s.testConflict},
		{"ConcurrentWriters", s.testConcurrent},
		{"Modules", s.testModules},
		{"Deterministic", s.testDeterministic},
	} {
		s.run(t, c.name, c.test)
	}
	for _, name := range slices.Sorted(maps.Keys(h.Skip)) {
		if !s.seen[name] {
			t.Errorf("Harness.Skip names %q, which is no subtest of the suite", name)
		}
	}
}

// run runs a subtest, unless the harness skips it. Its name is recorded
// even when go test -run leaves it out.
func (s *suite) run(t *testing.T, name string, test func(*testing.T)) {
	t.Helper()
	// As testing names subtests: the suite's names have spaces, nothing
	// else it rewrites.
	rel := strings.TrimPrefix(t.Name()+"/"+strings.ReplaceAll(name, " ", "_"), s.root+"/")
	s.mu.Lock()
	s.seen[rel] = true
	s.mu.Unlock()
	t.Run(name, func(t *testing.T) {
		if reason, ok := s.h.Skip[rel]; ok {
			t.Skip(reason)
		}
		test(t)
	})
}

type suite struct {
	h    Harness
	root string // the name of Run's test

	mu     sync.Mutex
	listed map[string]mirror.Listed // by location
	seen   map[string]bool          // subtests run, by name below root
}

// reader returns loc as clients read it: one reader per location, opened
// by the test that first reads it.
func (s *suite) reader(t *testing.T, loc string) mirror.Listed {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.listed[loc]
	if !ok {
		l = s.h.Listed(t, loc)
		s.listed[loc] = l
	}
	return l
}

// open opens a writer that fails nothing.
func (s *suite) open(t *testing.T, loc string) Writer {
	t.Helper()
	return s.h.Open(t, loc, 0)
}

// locked runs fn holding w's lock, as a build does. It may run in
// another goroutine than the test's.
func locked(t *testing.T, w Writer, fn func() error) error {
	t.Helper()
	if w.Lock == nil {
		return fn()
	}
	unlock, err := w.Lock(t.Context(), lockWait)
	if err != nil {
		return fmt.Errorf("lock %s: %w", w.Location(), err)
	}
	err = fn()
	if uerr := unlock(); uerr != nil {
		t.Errorf("unlock %s: %v", w.Location(), uerr)
	}
	return err
}

// publish publishes releases through w, one after the other, failing the
// test on an error.
func publish(t *testing.T, w Writer, releases ...layout.Release) {
	t.Helper()
	err := locked(t, w, func() error {
		for _, r := range releases {
			if err := w.Publish(t.Context(), r); err != nil {
				return fmt.Errorf("publish %s %s: %w", r.Provider, r.Version, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// view returns what clients see of providers at loc.
func (s *suite) view(t *testing.T, loc string, providers ...addrs.Provider) state {
	t.Helper()
	l := s.reader(t, loc)
	out := state{}
	for _, p := range providers {
		versions, _, err := l.ListVersions(t.Context(), p)
		if err != nil {
			t.Fatalf("list the versions of %s in %s: %v", p, l.Location(), err)
		}
		for _, v := range versions {
			out[versionKey(p, v)] = ""
			for plat, pkg := range l.ListVersion(t.Context(), p, v).Packages {
				out[packageKey(p, v, plat)] = hashing.Hash("(no zh: hash among " + fmt.Sprint(pkg.Hashes) + ")")
				for _, h := range pkg.Hashes {
					if strings.HasPrefix(string(h), hashing.SchemeZH) {
						out[packageKey(p, v, plat)] = h
					}
				}
			}
		}
	}
	return out
}

// visible returns the providers st lists.
func visible(st state, providers ...addrs.Provider) []addrs.Provider {
	var out []addrs.Provider
	for _, p := range providers {
		for k := range st {
			if strings.HasPrefix(k, p.String()+" ") {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// providerLister is a Listed that can name the providers it holds.
type providerLister interface {
	Providers(ctx context.Context) ([]addrs.Provider, error)
}

// verify runs mirror.Verifier over loc as clients read it, for the named
// providers (those the location lists, where it can list them), and
// reports every problem and warning.
func (s *suite) verify(t *testing.T, loc string, providers ...addrs.Provider) {
	t.Helper()
	l := s.reader(t, loc)
	if _, lists := l.(providerLister); len(providers) == 0 && !lists {
		return // nothing to name, and the destination cannot list
	}
	v := &mirror.Verifier{Mirror: l, Providers: providers, Checker: checker{}, TempDir: t.TempDir()}
	r, err := v.Verify(t.Context())
	if err != nil {
		t.Fatalf("verify %s: %v", l.Location(), err)
	}
	for _, p := range r.Problems {
		t.Errorf("verify %s: problem at %s: %s", l.Location(), p.Path, p.Message)
	}
	for _, p := range append(r.Warnings, r.Accepted...) {
		t.Errorf("verify %s: warning at %s: %s", l.Location(), p.Path, p.Message)
	}
}

// held returns what w holds of the queried platforms of p's versions.
func held(t *testing.T, w Writer, p addrs.Provider, verify bool, queries ...layout.HeldQuery) []string {
	t.Helper()
	got, err := w.Held(t.Context(), p, queries, verify)
	if err != nil {
		t.Fatalf("Held(%s, verify %v) in %s: %v", p, verify, w.Location(), err)
	}
	out := []string{}
	for _, h := range got {
		out = append(out, heldString(h))
	}
	slices.Sort(out)
	return out
}

func query(v addrs.Version, platforms ...addrs.Platform) layout.HeldQuery {
	return layout.HeldQuery{Version: v, Platforms: platforms}
}

// checkArchives reads every package st lists back through the listing
// and compares its bytes with the upstream's.
func (s *suite) checkArchives(t *testing.T, loc string, st state, ups ...*upstream) {
	t.Helper()
	l := s.reader(t, loc)
	for _, u := range ups {
		for plat, want := range u.data {
			if _, listed := st[packageKey(u.provider, u.version, plat)]; !listed {
				continue
			}
			rc, err := l.OpenArchive(t.Context(), u.provider, u.version, plat)
			if err != nil {
				t.Errorf("open the archive of %s: %v", packageKey(u.provider, u.version, plat), err)
				continue
			}
			got, err := io.ReadAll(rc)
			_ = rc.Close()
			if err != nil || string(got) != string(want) {
				t.Errorf("the archive of %s: %d bytes (%v); want the %d published", packageKey(u.provider, u.version, plat), len(got), err, len(want))
			}
		}
	}
}

// A published release's packages are held, with the zh: hash and size
// its provenance records, by a writer opened later (an incremental
// build), with and without verify; a platform, version or provider never
// published holds nothing.
func (s *suite) testHeld(t *testing.T) {
	loc := s.h.NewLocation(t)
	up := newUpstream(t, foo, "1.0.0", "", all...)
	publish(t, s.open(t, loc), up.release(linux, darwin))

	want := up.state(linux, darwin)
	if diff := s.view(t, loc, foo).diff(want); diff != "" {
		t.Fatalf("clients see other than what was published: %s", diff)
	}
	s.verify(t, loc, foo)
	s.checkArchives(t, loc, want, up)
	s.checkSBOMs(t, loc, want, up)

	never := addrs.MustParseVersion("9.9.9")
	w := s.open(t, loc)
	for _, verify := range []bool{false, true} {
		got := held(t, w, foo, verify, query(up.version, all...), query(never, all...))
		if wantHeld := up.held(darwin, linux); !slices.Equal(got, wantHeld) {
			t.Errorf("Held(verify %v) = %q; want %q", verify, got, wantHeld)
		}
		if got := held(t, w, bar, verify, query(up.version, all...)); len(got) != 0 {
			t.Errorf("Held(verify %v) of a provider never published = %q; want nothing", verify, got)
		}
	}
	if got := held(t, w, foo, false, query(never, linux)); len(got) != 0 {
		t.Errorf("Held of a version never published = %q; want nothing", got)
	}
}

// checkSBOMs reads the SBOM of every package st lists back and compares
// it with the one published.
func (s *suite) checkSBOMs(t *testing.T, loc string, st state, ups ...*upstream) {
	t.Helper()
	l := s.reader(t, loc)
	for _, u := range ups {
		for plat, want := range u.sboms {
			if _, listed := st[packageKey(u.provider, u.version, plat)]; !listed {
				continue
			}
			got, err := l.ReadSBOM(t.Context(), u.provider, u.version, plat)
			if err != nil || string(got) != string(want) {
				t.Errorf("the SBOM of %s: %q (%v); want %q", packageKey(u.provider, u.version, plat), got, err, want)
			}
		}
	}
}

// A package published without an SBOM (by a tfmirror that made none)
// has none: not held with one, and reading it is fs.ErrNotExist. A later
// publication of the same package with its SBOM adds it (held, read
// back, verified), and one without it again keeps it.
func (s *suite) testSBOM(t *testing.T) {
	loc := s.h.NewLocation(t)
	up := newUpstream(t, foo, "1.0.0", "", linux, darwin)
	publish(t, s.open(t, loc), up.bare(linux, darwin))
	if _, err := s.reader(t, loc).ReadSBOM(t.Context(), foo, up.version, linux); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSBOM of a package published without one: %v; want fs.ErrNotExist", err)
	}
	bare := held(t, s.open(t, loc), foo, true, query(up.version, linux))
	if len(bare) != 1 || !strings.HasSuffix(bare[0], "sbom false") {
		t.Errorf("Held of a package published without an SBOM = %q; want it held, without one", bare)
	}
	s.verify(t, loc, foo)

	for _, rel := range []layout.Release{up.release(linux, darwin), up.bare(darwin, linux)} {
		publish(t, s.open(t, loc), rel)
		want := up.state(linux, darwin)
		if diff := s.view(t, loc, foo).diff(want); diff != "" {
			t.Fatalf("clients see other than what was published: %s", diff)
		}
		s.checkSBOMs(t, loc, want, up)
		s.verify(t, loc, foo)
		for _, verify := range []bool{false, true} {
			if got, want := held(t, s.open(t, loc), foo, verify, query(up.version, all...)), up.held(darwin, linux); !slices.Equal(got, want) {
				t.Errorf("Held(verify %v) = %q; want %q", verify, got, want)
			}
		}
	}
}

// A publication that fails at its n-th write into the backend, for every
// n until it needs no more, leaves clients with either what they saw
// before or the whole new release, never a listed package whose bytes
// are missing (mirror.Verifier finds nothing wrong), and nothing held
// that is not listed; a later publication completes it.
func (s *suite) testPublishOrder(t *testing.T) {
	up1 := newUpstream(t, foo, "1.0.0", "", linux, darwin)
	up2 := newUpstream(t, foo, "1.1.0", "", linux, darwin)
	for _, c := range []struct {
		name string
		old  []layout.Release
		next layout.Release
		want state // after next
	}{
		{"first version", nil, up1.release(linux, darwin), up1.state(linux, darwin)},
		{"new version", []layout.Release{up1.release(linux)}, up2.release(linux, darwin), merge(up1.state(linux), up2.state(linux, darwin))},
		{"new platform", []layout.Release{up1.release(linux)}, up1.release(darwin), up1.state(linux, darwin)},
	} {
		s.run(t, c.name, func(t *testing.T) {
			t.Parallel()
			for n := 1; ; n++ {
				if n > maxWrites {
					t.Fatalf("the publication still fails at write %d: it never completes", n)
				}
				if done := s.failAt(t, n, c.old, c.next, c.want); done {
					t.Logf("the publication makes %d writes", n-1)
					return
				}
				if t.Failed() {
					t.Fatalf("after a failure at write %d", n)
				}
			}
		})
	}
}

// maxWrites bounds the writes of one publication in testPublishOrder.
const maxWrites = 100

// failAt publishes old into a fresh location, then next through a writer
// whose n-th write fails, and checks what clients see; it reports whether
// no write failed (the publication needs fewer).
func (s *suite) failAt(t *testing.T, n int, old []layout.Release, next layout.Release, want state) bool {
	t.Helper()
	loc := s.h.NewLocation(t)
	if len(old) > 0 {
		publish(t, s.open(t, loc), old...)
	}
	before := s.view(t, loc, foo)

	w := s.h.Open(t, loc, n)
	err := locked(t, w, func() error { return w.Publish(t.Context(), next) })
	if w.Failed() == 0 {
		if err != nil {
			t.Fatalf("no write failed, but Publish: %v", err)
		}
		if diff := s.view(t, loc, foo).diff(want); diff != "" {
			t.Errorf("clients see other than what was published: %s", diff)
		}
		s.verify(t, loc, foo)
		return true
	}
	if err == nil {
		t.Errorf("write %d failed, but Publish returned no error", n)
	}
	got := s.view(t, loc, foo)
	if got.diff(before) != "" && got.diff(want) != "" {
		t.Errorf("after a failure at write %d (%v), clients see neither what they saw before (%s) nor the whole release (%s)", n, err, got.diff(before), got.diff(want))
	}
	s.verify(t, loc, visible(got, foo)...)
	var queries []layout.HeldQuery
	for _, v := range []string{"1.0.0", "1.1.0"} {
		queries = append(queries, query(addrs.MustParseVersion(v), all...))
	}
	heldNow, err := s.open(t, loc).Held(t.Context(), foo, queries, false)
	if err != nil {
		t.Errorf("Held after a failure at write %d: %v", n, err)
	}
	for _, h := range heldNow {
		if zh, listed := got[packageKey(foo, h.Version, h.Platform)]; !listed || zh != h.ZH {
			t.Errorf("after a failure at write %d, Held says %s is held, but clients see %s", n, heldString(h), got)
		}
	}

	// The next publication completes it.
	publish(t, s.open(t, loc), next)
	if diff := s.view(t, loc, foo).diff(want); diff != "" {
		t.Errorf("after a failure at write %d and a publication again, clients see other than the release: %s", n, diff)
	}
	s.verify(t, loc, foo)
	return false
}

// Archives put ahead of their publication are not seen by clients until
// it (no version listed, nothing held), and the publication then gives
// exactly what a publication alone gives.
func (s *suite) testAhead(t *testing.T) {
	old := newUpstream(t, foo, "0.9.0", "", linux)
	up := newUpstream(t, foo, "1.0.0", "", linux, darwin)
	rel := up.release(linux, darwin)
	for _, c := range []struct {
		name string
		old  []layout.Release
	}{
		{"first version", nil},
		{"new version", []layout.Release{old.release(linux)}},
	} {
		s.run(t, c.name, func(t *testing.T) {
			ahead, alone := s.h.NewLocation(t), s.h.NewLocation(t)
			var before state
			if len(c.old) > 0 {
				publish(t, s.open(t, ahead), c.old...)
				publish(t, s.open(t, alone), c.old...)
				before = old.state(linux)
			}
			w := s.open(t, ahead)
			err := locked(t, w, func() error {
				for _, a := range rel.Archives {
					if err := w.PutArchiveAhead(t.Context(), rel.Provider, rel.Version, a); err != nil {
						return fmt.Errorf("PutArchiveAhead %s: %w", a.Platform, err)
					}
				}
				if diff := s.view(t, ahead, foo).diff(merge(before)); diff != "" {
					t.Errorf("with the archives put ahead, clients see other than before: %s", diff)
				}
				s.verify(t, ahead, visible(before, foo)...)
				if got := held(t, s.open(t, ahead), foo, true, query(up.version, all...)); len(got) != 0 {
					t.Errorf("with the archives put ahead, Held = %q; want nothing", got)
				}
				return w.Publish(t.Context(), rel)
			})
			if err != nil {
				t.Fatal(err)
			}
			publish(t, s.open(t, alone), rel)

			want := merge(before, up.state(linux, darwin))
			if diff := s.view(t, ahead, foo).diff(want); diff != "" {
				t.Errorf("after the publication, clients see other than the release: %s", diff)
			}
			s.verify(t, ahead, foo)
			s.checkArchives(t, ahead, want, up)
			if diff := snapshotDiff(s.h.Snapshot(t, alone, []addrs.Provider{foo}, nil), s.h.Snapshot(t, ahead, []addrs.Provider{foo}, nil)); diff != "" {
				t.Errorf("published alone (-) and with archives put ahead (+), the destinations differ:\n%s", diff)
			}
		})
	}
}

// A second platform of a version keeps the first listed, a second
// version keeps the first; each publication is a writer of its own.
func (s *suite) testMerge(t *testing.T) {
	loc := s.h.NewLocation(t)
	up1 := newUpstream(t, foo, "1.0.0", "", linux, darwin)
	up2 := newUpstream(t, foo, "1.1.0", "", linux, windows)
	steps := []struct {
		name string
		rel  layout.Release
		want state
	}{
		{"a platform", up1.release(linux), up1.state(linux)},
		{"another platform of the version", up1.release(darwin), up1.state(linux, darwin)},
		{"another version", up2.release(windows, linux), merge(up1.state(linux, darwin), up2.state(linux, windows))},
		{"a platform again", up1.release(linux), merge(up1.state(linux, darwin), up2.state(linux, windows))},
	}
	for _, step := range steps {
		publish(t, s.open(t, loc), step.rel)
		if diff := s.view(t, loc, foo).diff(step.want); diff != "" {
			t.Fatalf("after %s, clients see other than what was published: %s", step.name, diff)
		}
	}
	s.verify(t, loc, foo)
	want := append(up1.held(darwin, linux), up2.held(linux, windows)...)
	slices.Sort(want)
	if got := held(t, s.open(t, loc), foo, true, query(up1.version, all...), query(up2.version, all...)); !slices.Equal(got, want) {
		t.Errorf("Held = %q; want %q", got, want)
	}
}

// Other bytes for a package the destination holds are refused with a
// *layout.ConflictError naming the package, and clients see nothing of
// the refused publication, not even its platforms that did not conflict.
func (s *suite) testConflict(t *testing.T) {
	up := newUpstream(t, foo, "1.0.0", "", linux, darwin, windows)
	rereleased := newUpstream(t, foo, "1.0.0", "re-released", linux, darwin, windows)
	for _, c := range []struct {
		name string
		rel  layout.Release
	}{
		{"the same platform", rereleased.release(linux)},
		{"with a new platform", rereleased.release(windows, linux)},
	} {
		s.run(t, c.name, func(t *testing.T) {
			loc := s.h.NewLocation(t)
			publish(t, s.open(t, loc), up.release(linux, darwin))
			before := s.h.Snapshot(t, loc, []addrs.Provider{foo}, nil)

			w := s.open(t, loc)
			err := locked(t, w, func() error { return w.Publish(t.Context(), c.rel) })
			var conflict *layout.ConflictError
			switch {
			case err == nil:
				t.Errorf("a publication of other bytes for %s was not refused", linux)
			case !errors.As(err, &conflict) || len(conflict.Conflicts) == 0:
				t.Errorf("a publication of other bytes for %s: %v; want an error wrapping a *layout.ConflictError", linux, err)
			case !strings.Contains(err.Error(), linux.String()):
				t.Errorf("the conflict does not name %s: %v", linux, err)
			}

			if diff := s.view(t, loc, foo).diff(up.state(linux, darwin)); diff != "" {
				t.Errorf("after the refusal, clients see other than before: %s", diff)
			}
			if diff := snapshotDiff(before, s.h.Snapshot(t, loc, []addrs.Provider{foo}, nil)); diff != "" {
				t.Errorf("the refused publication changed the destination (-before +after):\n%s", diff)
			}
			s.verify(t, loc, foo)
			s.checkArchives(t, loc, up.state(linux, darwin), up)
			if got, want := held(t, s.open(t, loc), foo, true, query(up.version, all...)), up.held(darwin, linux); !slices.Equal(got, want) {
				t.Errorf("after the refusal, Held = %q; want %q", got, want)
			}
		})
	}
}

// Two writers publishing at the same time, each with its own store and
// lock as separate builds do, both end up listed: different versions,
// and different platforms of one version. Each round publishes new
// versions into the same location, so later rounds race on existing
// documents.
func (s *suite) testConcurrent(t *testing.T) {
	const rounds = 3
	for _, c := range []struct {
		name string
		pair func(round int) (a, b layout.Release, want state)
	}{
		{"versions", func(round int) (layout.Release, layout.Release, state) {
			ua := newUpstream(t, foo, fmt.Sprintf("1.%d.0", round), "", linux, darwin)
			ub := newUpstream(t, foo, fmt.Sprintf("2.%d.0", round), "", linux, darwin)
			return ua.release(linux, darwin), ub.release(darwin, linux), merge(ua.state(linux, darwin), ub.state(linux, darwin))
		}},
		{"platforms of a version", func(round int) (layout.Release, layout.Release, state) {
			u := newUpstream(t, foo, fmt.Sprintf("3.%d.0", round), "", linux, darwin)
			return u.release(linux), u.release(darwin), u.state(linux, darwin)
		}},
	} {
		s.run(t, c.name, func(t *testing.T) {
			loc := s.h.NewLocation(t)
			want := state{}
			for round := range rounds {
				a, b, add := c.pair(round)
				want = merge(want, add)
				wa, wb := s.open(t, loc), s.open(t, loc)
				start := make(chan struct{})
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, job := range []struct {
					w   Writer
					rel layout.Release
				}{{wa, a}, {wb, b}} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						errs[i] = locked(t, job.w, func() error { return job.w.Publish(t.Context(), job.rel) })
					}()
				}
				close(start)
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d: writer %d: %v", round, i+1, err)
					}
				}
				if diff := s.view(t, loc, foo).diff(want); diff != "" {
					t.Errorf("round %d: after two writers published at once, clients see other than both publications: %s", round, diff)
				}
			}
			s.verify(t, loc, foo)
		})
	}
}

// A module package published is held (with its record, where the
// destination keeps records) and read back byte for byte; a version never
// published is not held; other bytes for the version are refused and
// change nothing.
func (s *suite) testModules(t *testing.T) {
	loc := s.h.NewLocation(t)
	pkg := newModule(t, "1.0.0", "")
	never := addrs.MustParseVersion("9.9.9")

	w := s.open(t, loc)
	if h, err := w.HeldModule(t.Context(), module, pkg.Version); err != nil || h.Found {
		t.Fatalf("HeldModule before any publication = %+v, %v; want not found", h, err)
	}
	if err := locked(t, w, func() error { return w.PublishModule(t.Context(), pkg.ModuleRelease) }); err != nil {
		t.Fatalf("PublishModule: %v", err)
	}

	r := s.open(t, loc)
	s.checkModule(t, r, pkg)
	if h, err := r.HeldModule(t.Context(), module, never); err != nil || h.Found {
		t.Errorf("HeldModule of a version never published = %+v, %v; want not found", h, err)
	}
	if err := locked(t, r, func() error { return r.PublishModule(t.Context(), pkg.ModuleRelease) }); err != nil {
		t.Errorf("PublishModule again: %v", err)
	}

	before := s.h.Snapshot(t, loc, nil, []addrs.Module{module})
	other := newModule(t, "1.0.0", "moved")
	c := s.open(t, loc)
	err := locked(t, c, func() error { return c.PublishModule(t.Context(), other.ModuleRelease) })
	var conflict *layout.ConflictError
	switch {
	case err == nil:
		t.Errorf("a module package with other bytes for %s %s was not refused", module, pkg.Version)
	case !errors.As(err, &conflict) || len(conflict.Conflicts) == 0:
		t.Errorf("a module package with other bytes: %v; want an error wrapping a *layout.ConflictError", err)
	}
	s.checkModule(t, s.open(t, loc), pkg)
	if diff := snapshotDiff(before, s.h.Snapshot(t, loc, nil, []addrs.Module{module})); diff != "" {
		t.Errorf("the refused module package changed the destination (-before +after):\n%s", diff)
	}
	s.verify(t, loc)
}

// checkModule checks that w holds pkg, and reads it back.
func (s *suite) checkModule(t *testing.T, w Writer, pkg modulePackage) {
	t.Helper()
	h, err := w.HeldModule(t.Context(), module, pkg.Version)
	if err != nil || !h.Found || h.SHA256 != pkg.Record.SHA256 {
		t.Errorf("HeldModule = %+v, %v; want found with SHA-256 %s", h, err, pkg.Record.SHA256)
	}
	switch {
	case s.h.ModuleRecords && h.Record == nil:
		t.Errorf("HeldModule has no record; the destination keeps records")
	case s.h.ModuleRecords && !moduleRecordsEqual(*h.Record, pkg.Record):
		t.Errorf("HeldModule's record is %+v; want the published %+v", *h.Record, pkg.Record)
	case !s.h.ModuleRecords && h.Record != nil:
		t.Errorf("HeldModule has a record %+v; the destination keeps none", *h.Record)
	}
	rc, err := w.OpenModuleArchive(t.Context(), module, pkg.Version)
	if err != nil {
		t.Errorf("OpenModuleArchive: %v", err)
		return
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || string(got) != string(pkg.data) {
		t.Errorf("OpenModuleArchive read %d bytes (%v); want the %d published", len(got), err, len(pkg.data))
	}
}

func moduleRecordsEqual(a, b layout.ModuleRecord) bool {
	return a.SHA256 == b.SHA256 && a.Size == b.Size && a.Subdir == b.Subdir && a.Upstream == b.Upstream && slices.Equal(a.Calls, b.Calls)
}

// The same publications into two fresh destinations give the same
// bytes: a tree's files, a registry's tags and manifests. The order of a
// release's archives, and of the versions' publications, does not
// matter.
func (s *suite) testDeterministic(t *testing.T) {
	up1 := newUpstream(t, foo, "1.0.0", "", linux, darwin)
	up2 := newUpstream(t, foo, "1.1.0", "", linux, windows)
	up3 := newUpstream(t, bar, "0.1.0", "", linux)
	pkg := newModule(t, "1.0.0", "")
	providers, modules := []addrs.Provider{foo, bar}, []addrs.Module{module}

	one, two := s.h.NewLocation(t), s.h.NewLocation(t)
	w := s.open(t, one)
	publish(t, w, up1.release(linux, darwin), up2.release(linux, windows), up3.release(linux))
	if err := locked(t, w, func() error { return w.PublishModule(t.Context(), pkg.ModuleRelease) }); err != nil {
		t.Fatal(err)
	}
	w = s.open(t, two)
	if err := locked(t, w, func() error { return w.PublishModule(t.Context(), pkg.ModuleRelease) }); err != nil {
		t.Fatal(err)
	}
	publish(t, w, up3.release(linux), up2.release(windows, linux), up1.release(darwin, linux))

	a, b := s.h.Snapshot(t, one, providers, modules), s.h.Snapshot(t, two, providers, modules)
	if len(a) == 0 {
		t.Fatal("the snapshot of a destination holding two providers and a module is empty")
	}
	if diff := snapshotDiff(a, b); diff != "" {
		t.Errorf("the same publications into two fresh destinations differ (-first +second):\n%s", diff)
	}
	s.verify(t, one, providers...)
}

// snapshotDiff describes how two snapshots differ; "" when they do not.
func snapshotDiff(a, b map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if w, ok := b[k]; !ok {
			lines = append(lines, "- "+k+" "+a[k])
		} else if w != a[k] {
			lines = append(lines, "- "+k+" "+a[k], "+ "+k+" "+w)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			lines = append(lines, "+ "+k+" "+b[k])
		}
	}
	return strings.Join(lines, "\n")
}
