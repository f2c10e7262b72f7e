package mirror

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// fakeSource is an in-memory origin. Its files are named like
// "provider/version/filename" and served from memLocations.
type fakeSource struct {
	mu        sync.Mutex
	versions  map[string][]string    // provider → versions
	metas     map[string]PackageMeta // "provider version platform" → meta
	files     map[string][]byte      // name → body
	failURL   map[string]error       // name → error returned by its Fetch
	fetches   map[string]int         // name → count
	listErr   map[string]error       // provider → AvailableVersions error
	metaCalls int                    // PackageMeta calls
}

func newFakeSource() *fakeSource {
	return &fakeSource{
		versions: map[string][]string{}, metas: map[string]PackageMeta{},
		files: map[string][]byte{}, failURL: map[string]error{}, fetches: map[string]int{},
		listErr: map[string]error{},
	}
}

func key(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return fmt.Sprintf("%s %s %s", p, v, plat)
}

// fileFetcher serves a fakeSource's files by name: the fakeSource itself,
// or a test's wrapper of it that changes how some are served.
type fileFetcher interface {
	fetchFile(ctx context.Context, name string, w Sink) error
}

// memLocation is a file of a fakeSource, fetched through via.
type memLocation struct {
	via  fileFetcher
	name string
}

func (l memLocation) Fetch(ctx context.Context, w Sink) error { return l.via.fetchFile(ctx, l.name, w) }

func (l memLocation) String() string { return "mem:" + l.name }

func (s *fakeSource) mem(name string) Location { return memLocation{via: s, name: name} }

// add publishes a release signed by key "good" with the given platforms.
func (s *fakeSource) add(provider, version string, platforms ...string) {
	p := addrs.MustParseProvider(provider)
	v := addrs.MustParseVersion(version)
	s.versions[p.String()] = append(s.versions[p.String()], version)
	var sums strings.Builder
	base := fmt.Sprintf("%s/%s", p, v)
	slices.Sort(platforms)
	for _, plat := range platforms {
		pl, _ := addrs.ParsePlatform(plat)
		name := layout.ArchiveName(p, v, pl)
		body := makeZip(base + " " + plat)
		sum := sha256.Sum256(body)
		fmt.Fprintf(&sums, "%x  %s\n", sum, name)
		s.files[base+"/"+name] = body
		s.metas[key(p, v, pl)] = PackageMeta{
			Filename: name, Archive: s.mem(base + "/" + name),
			Sums: s.mem(base + "/SHA256SUMS"), Signature: s.mem(base + "/SHA256SUMS.sig"),
			SHA256: sum, SigningKeys: []string{"good"},
		}
	}
	s.files[base+"/SHA256SUMS"] = []byte(sums.String())
	s.files[base+"/SHA256SUMS.sig"] = []byte("signed-by:good")
}

func makeZip(content string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("terraform-provider-x")
	_, _ = io.WriteString(w, content)
	_ = zw.Close()
	return buf.Bytes()
}

func (s *fakeSource) AvailableVersions(_ context.Context, p addrs.Provider) (addrs.VersionList, error) {
	if err := s.listErr[p.String()]; err != nil {
		return nil, err
	}
	var out addrs.VersionList
	for _, raw := range s.versions[p.String()] {
		out = append(out, addrs.MustParseVersion(raw))
	}
	return out, nil
}

func (s *fakeSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	return s.packageMetaVia(ctx, p, v, plat, s)
}

// packageMetaVia is PackageMeta with the files served through via.
func (s *fakeSource) packageMetaVia(_ context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform, via fileFetcher) (PackageMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metaCalls++
	m, ok := s.metas[key(p, v, plat)]
	if !ok {
		return PackageMeta{}, fmt.Errorf("%s: %w", key(p, v, plat), ErrPlatformUnavailable)
	}
	for _, l := range []*Location{&m.Archive, &m.Sums, &m.Signature} {
		if ml, ok := (*l).(memLocation); ok {
			ml.via = via
			*l = ml
		}
	}
	return m, nil
}

func (s *fakeSource) fetchFile(ctx context.Context, name string, w Sink) error {
	s.mu.Lock()
	s.fetches[name]++
	body, ok := s.files[name]
	err := s.failURL[name]
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: not found", name)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	_, werr := w.Write(body)
	return werr
}

func (s *fakeSource) fetchCount(suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for u, c := range s.fetches {
		if strings.HasSuffix(u, suffix) {
			n += c
		}
	}
	return n
}

// fakeChecker accepts a signature "signed-by:K" when K is an offered key.
type fakeChecker struct{}

func (fakeChecker) CheckSignature(doc, sig []byte, keys []string) (Signer, error) {
	signer, ok := strings.CutPrefix(string(sig), "signed-by:")
	if !ok || !slices.Contains(keys, signer) {
		return Signer{}, errors.New("unknown issuer")
	}
	id := strings.ToUpper(hex.EncodeToString([]byte(signer)))
	return Signer{KeyID: id, Fingerprint: strings.Repeat("0", 40-len(id)) + id, Expired: strings.HasPrefix(signer, "expired")}, nil
}

func mustPlatforms(ss ...string) []addrs.Platform {
	var out []addrs.Platform
	for _, s := range ss {
		p, err := addrs.ParsePlatform(s)
		if err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

func requirement(t *testing.T, provider, constraints string, platforms ...string) Requirement {
	t.Helper()
	set, err := addrs.ParseConstraints(constraints)
	if err != nil {
		t.Fatal(err)
	}
	return Requirement{Provider: addrs.MustParseProvider(provider), Constraints: constraints, Allowed: set, Platforms: mustPlatforms(platforms...)}
}
