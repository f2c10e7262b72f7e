package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// memRegistry is a Destination in memory, as an OCI registry is one: it
// holds packages and module packages, but no module records, and takes
// nothing ahead. It records what it was asked to publish.
type memRegistry struct {
	mu        sync.Mutex
	held      map[string]map[addrs.Platform]layout.HeldPackage // by "provider version"
	published []string                                         // "provider version platform"
	asked     int                                              // calls of Held
	modules   map[string]string                                // package SHA-256 by "module version"
}

func (m *memRegistry) Location() string { return "mem://registry" }

func (m *memRegistry) Held(_ context.Context, p addrs.Provider, queries []layout.HeldQuery, _ bool) ([]layout.HeldPackage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked++
	var out []layout.HeldPackage
	for _, q := range queries {
		for _, plat := range q.Platforms {
			if h, ok := m.held[p.String()+" "+q.Version.String()][plat]; ok {
				out = append(out, h)
			}
		}
	}
	return out, nil
}

func (m *memRegistry) PutArchiveAhead(context.Context, addrs.Provider, addrs.Version, layout.Archive) error {
	return nil
}

func (m *memRegistry) Publish(_ context.Context, rel layout.Release) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := rel.Provider.String() + " " + rel.Version.String()
	if m.held[key] == nil {
		m.held[key] = map[addrs.Platform]layout.HeldPackage{}
	}
	for _, a := range rel.Archives {
		sum, size, err := hashing.HashFile(a.Staged)
		if err != nil {
			return err
		}
		m.held[key][a.Platform] = layout.HeldPackage{Version: rel.Version, Platform: a.Platform, ZH: hashing.ZH(sum), Size: size, KeyID: rel.Record.Provenance.KeyID}
		m.published = append(m.published, key+" "+a.Platform.String())
	}
	return nil
}

func (m *memRegistry) HeldModule(_ context.Context, mod addrs.Module, v addrs.Version) (layout.HeldModule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sum, ok := m.modules[mod.String()+" "+v.String()]
	return layout.HeldModule{Found: ok, SHA256: sum}, nil
}

func (m *memRegistry) PublishModule(_ context.Context, r layout.ModuleRelease) error {
	data, err := os.ReadFile(r.Staged)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != r.Record.SHA256 {
		return errors.New("the staged package is not the recorded one")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.modules == nil {
		m.modules = map[string]string{}
	}
	m.modules[r.Module.String()+" "+r.Version.String()] = r.Record.SHA256
	return nil
}

func (m *memRegistry) OpenModuleArchive(context.Context, addrs.Module, addrs.Version) (io.ReadCloser, error) {
	return nil, fs.ErrNotExist // a registry is never copied from: it keeps no record
}

// A registry is published into from the same download as the trees; a
// rebuild keeps what both hold, and fetches (from the tree, without a
// download) what only the tree holds.
func TestBuildPublishesIntoRegistries(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	req := requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")
	reg := &memRegistry{held: map[string]map[addrs.Platform]layout.HeldPackage{}}
	build := func() *Report {
		tree, err := layout.Open(h.root)
		if err != nil {
			t.Fatal(err)
		}
		defer tree.Close()
		b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination(), reg}, Work: tree.Workspace}
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
