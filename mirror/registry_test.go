package mirror

import (
	"context"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// memRegistry is a Registry in memory: what it holds, and what it was
// asked to publish.
type memRegistry struct {
	mu        sync.Mutex
	held      map[string]map[addrs.Platform]HeldPackage // by "provider version"
	published []string                                  // "provider version platform"
	asked     int                                       // calls of Held
}

func (m *memRegistry) Location() string { return "mem://registry" }

func (m *memRegistry) Held(_ context.Context, p addrs.Provider, v addrs.Version) (map[addrs.Platform]HeldPackage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked++
	return m.held[p.String()+" "+v.String()], nil
}

func (m *memRegistry) Publish(_ context.Context, rel layout.Release) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := rel.Provider.String() + " " + rel.Version.String()
	if m.held[key] == nil {
		m.held[key] = map[addrs.Platform]HeldPackage{}
	}
	for _, a := range rel.Archives {
		sum, size, err := hashing.HashFile(a.Staged)
		if err != nil {
			return err
		}
		m.held[key][a.Platform] = HeldPackage{ZH: hashing.ZH(sum), Size: size, KeyID: rel.Record.Provenance.KeyID}
		m.published = append(m.published, key+" "+a.Platform.String())
	}
	return nil
}

// A registry is published into from the same download as the trees; a
// rebuild keeps what both hold, and fetches (from the tree, without a
// download) what only the tree holds.
func TestBuildPublishesIntoRegistries(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	req := requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")
	reg := &memRegistry{held: map[string]map[addrs.Platform]HeldPackage{}}
	build := func() *Report {
		tree, err := layout.Open(h.root)
		if err != nil {
			t.Fatal(err)
		}
		defer tree.Close()
		b := &Builder{Source: h.src, Checker: fakeChecker{}, Trees: []*layout.Tree{tree.Tree}, Registries: []Registry{reg}, Work: tree.Workspace}
		return b.Build(context.Background(), []Requirement{req})
	}
	if r := build(); r.Err() != nil || r.Count(StatusMirrored) != 2 {
		t.Fatalf("first build: %v, %v", r.Err(), statuses(r))
	}
	if len(reg.published) != 2 {
		t.Fatalf("the registry was given %q; want both platforms", reg.published)
	}
	if reg.asked != 0 {
		t.Errorf("the registry was asked %d times what it holds, while the tree held nothing to keep", reg.asked)
	}
	downloads := h.src.fetchCount(".zip")
	if r := build(); r.Err() != nil || r.Count(StatusPresent) != 2 {
		t.Fatalf("no-op build: %v, %v", r.Err(), statuses(r))
	}
	if len(reg.published) != 2 {
		t.Errorf("the no-op build published %q into the registry", reg.published[2:])
	}
	// The registry loses a platform: it is published again, from the tree.
	delete(reg.held["registry.opentofu.org/hashicorp/foo 1.0.0"], addrs.MustParsePlatform("darwin_arm64"))
	if r := build(); r.Err() != nil {
		t.Fatal(r.Err())
	}
	if len(reg.published) != 3 || reg.published[2] != "registry.opentofu.org/hashicorp/foo 1.0.0 darwin_arm64" {
		t.Errorf("the registry was given %q; want darwin_arm64 again", reg.published)
	}
	if got := h.src.fetchCount(".zip"); got != downloads {
		t.Errorf("republishing into the registry downloaded %d archives; the tree holds them", got-downloads)
	}
}
