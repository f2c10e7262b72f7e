package layout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// opsStore records the writes made through a store.
type opsStore struct {
	*DirStore
	mu  sync.Mutex
	ops []string
	// onSign, if set, runs when the signature is written.
	onSign func()
}

func (s *opsStore) Put(ctx context.Context, rel string, c Content) error {
	s.mu.Lock()
	s.ops = append(s.ops, "put "+rel)
	s.mu.Unlock()
	err := s.DirStore.Put(ctx, rel, c)
	if rel == CatalogSignaturePath && s.onSign != nil {
		s.onSign()
	}
	return err
}

func (s *opsStore) Delete(ctx context.Context, rel string) error {
	s.mu.Lock()
	s.ops = append(s.ops, "delete "+rel)
	s.mu.Unlock()
	return s.DirStore.Delete(ctx, rel)
}

func (s *opsStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ops
	s.ops = nil
	return out
}

// digestSealer "signs" with a digest of the document: enough to tell
// which bytes a signature is of.
type digestSealer struct{}

func (digestSealer) SignArmored(doc []byte) ([]byte, error) {
	sum := sha256.Sum256(doc)
	return sum[:], nil
}

func (d digestSealer) Signs(doc, sig []byte) bool {
	want, _ := d.SignArmored(doc)
	return bytes.Equal(want, sig)
}

func sealedStore(t *testing.T) (*opsStore, *Tree) {
	t.Helper()
	ds, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &opsStore{DirStore: ds}
	unlock, err := s.Lock(t.Context(), time.Second, Publish)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unlock() })
	return s, NewTree(s)
}

// publishSealed publishes foo at version for linux_amd64 with a
// provenance record giving its zh: and h1:.
func publishSealed(t *testing.T, tr *Tree, version, content string) {
	t.Helper()
	v := addrs.MustParseVersion(version)
	sum := sha256.Sum256([]byte(content))
	zh, h1 := hashing.ZH(sum), hashing.Hash("h1:"+version)
	staged := t.TempDir() + "/a.zip"
	if err := os.WriteFile(staged, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := tr.PublishAll(t.Context(), Repair, []Release{{
		Provider: addrs.MustParseProvider("hashicorp/foo"), Version: v,
		Archives: []Archive{{Platform: addrs.MustParsePlatform("linux_amd64"), Staged: staged, Hashes: []hashing.Hash{zh, h1}}},
		Record: &Record{Sums: []byte("x  a.zip\n"), Provenance: Provenance{SigningKeys: []string{}, Archives: map[string]ProvenanceArchive{
			"linux_amd64": {Filename: "a.zip", H1: h1, ZH: zh, Size: int64(len(content))},
		}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSealCatalogOrder(t *testing.T) {
	s, tr := sealedStore(t)
	ctx := t.Context()
	publishSealed(t, tr, "1.0.0", "one")
	s.take()

	// An unsealed catalog is left alone without a key.
	if r, err := tr.SealCatalog(ctx, nil); err != nil || r.Rewrote || len(s.take()) != 0 {
		t.Fatalf("SealCatalog(nil) of an unsealed catalog: %+v, %v", r, err)
	}
	// Sealing: the old signature goes first, the new one last.
	r, err := tr.SealCatalog(ctx, digestSealer{})
	want := []string{"delete " + CatalogSignaturePath, "put " + CatalogPath, "put " + CatalogSignaturePath}
	if got := s.take(); err != nil || !slices.Equal(got, want) || r.Listed != 1 || !r.Signed {
		t.Fatalf("SealCatalog = %+v, %v; writes %q, want %q", r, err, got, want)
	}
	// Nothing changed: nothing written.
	if r, err := tr.SealCatalog(ctx, digestSealer{}); err != nil || r.Rewrote || r.Signed || len(s.take()) != 0 {
		t.Fatalf("SealCatalog again: %+v, %v", r, err)
	}

	// A publication that leaves catalog.json as it is keeps the
	// signature: it still vouches for those bytes. The next seal lists
	// the new archive.
	publishSealed(t, tr, "2.0.0", "two")
	if got := s.take(); slices.Contains(got, "delete "+CatalogSignaturePath) || slices.Contains(got, "put "+CatalogPath) {
		t.Errorf("publishing a version wrote %q", got)
	}
	r, err = tr.SealCatalog(ctx, digestSealer{})
	if got := s.take(); err != nil || !slices.Equal(got, want) || r.Listed != 2 {
		t.Fatalf("SealCatalog after a publication = %+v, %v; writes %q", r, err, got)
	}

	// Without a key a sealed catalog stays current, unsigned.
	publishSealed(t, tr, "3.0.0", "three")
	s.take()
	r, err = tr.SealCatalog(ctx, nil)
	if got := s.take(); err != nil || !slices.Equal(got, want[:2]) || r.Listed != 3 {
		t.Fatalf("SealCatalog(nil) of a sealed catalog = %+v, %v; writes %q", r, err, got)
	}
	if _, err := tr.Reader().Stat(ctx, CatalogSignaturePath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the signature of other bytes is still there: %v", err)
	}

	// A catalog changed by another writer while it was signed loses the
	// signature: none is better than one of other bytes.
	s.onSign = func() {
		s.onSign = nil
		if err := s.DirStore.Put(ctx, CatalogPath, Content{Data: []byte(`{"providers": []}`)}); err != nil {
			t.Error(err)
		}
	}
	if _, err := tr.SealCatalog(ctx, digestSealer{}); err == nil {
		t.Error("SealCatalog did not report a catalog changed while it was signed")
	}
	if _, err := tr.Reader().Stat(ctx, CatalogSignaturePath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a signature of other bytes was left: %v", err)
	}
}

// catalog.json names vulnerabilities.json by SHA-256 with its database
// and counts (DescribeCatalog), sealed or not; recording the same findings against the
// same database writes nothing; CheckVulnerabilitiesRef tells the file a
// catalog names from another.
func TestCatalogNamesVulnerabilities(t *testing.T) {
	s, tr := sealedStore(t)
	ctx := t.Context()
	publishSealed(t, tr, "1.0.0", "one")
	db := VulnDatabase{Records: 2, SHA256: "ab"}
	found := []PackageAdvisories{{Key: "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64", Advisories: map[string]Advisory{"GO-2099-0001": {Module: "stdlib", Found: "go1.1"}}}}
	if err := tr.RecordVulnerabilities(ctx, db, found); err != nil {
		t.Fatal(err)
	}
	s.take()
	if err := tr.RecordVulnerabilities(ctx, db, found); err != nil || len(s.take()) != 0 {
		t.Fatalf("recording the same findings against the same database wrote something (%v)", err)
	}
	for _, sealer := range []Sealer{nil, digestSealer{}} {
		if _, err := tr.DescribeCatalog(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.SealCatalog(ctx, sealer); err != nil {
			t.Fatal(err)
		}
		c, _, err := tr.ReadCatalog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(s.Root() + "/" + VulnerabilitiesPath)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		want := VulnerabilitiesRef{Path: VulnerabilitiesPath, SHA256: hex.EncodeToString(sum[:]), Database: &db, Packages: 1, Advisories: 1}
		if c.Vulnerabilities == nil || !reflect.DeepEqual(*c.Vulnerabilities, want) {
			t.Fatalf("sealed with %v: catalog.json names %+v, want %+v", sealer, c.Vulnerabilities, want)
		}
		if err := tr.CheckVulnerabilitiesRef(ctx, c.Vulnerabilities); err != nil {
			t.Errorf("the file the catalog names: %v", err)
		}
	}
	c, _, _ := tr.ReadCatalog(ctx)
	if err := tr.RecordVulnerabilities(ctx, VulnDatabase{Records: 3, SHA256: "cd"}, found); err != nil {
		t.Fatal(err)
	}
	if err := tr.CheckVulnerabilitiesRef(ctx, c.Vulnerabilities); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a vulnerabilities.json of another database than the catalog names: %v", err)
	}
	if err := tr.CheckVulnerabilitiesRef(ctx, nil); err == nil {
		t.Error("a vulnerabilities.json a catalog does not name passed")
	}
}
