package desttest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// The providers and the module the suite publishes. Their names are
// valid OCI repository path components, as a registry needs.
var (
	foo    = addrs.MustParseProvider("desttest/foo")
	bar    = addrs.MustParseProvider("desttest/bar")
	module = addrs.MustParseModule("desttest/network/aws")
)

// The platforms of the suite's releases.
var (
	linux   = addrs.MustParsePlatform("linux_amd64")
	darwin  = addrs.MustParsePlatform("darwin_arm64")
	windows = addrs.MustParsePlatform("windows_amd64")
	all     = []addrs.Platform{darwin, linux, windows}
)

// keyID and signingKey stand for the key that signed every release;
// checker accepts exactly the signature sign makes.
const (
	keyID      = "DE57DE57DE57DE57"
	signingKey = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\ndesttest key\n-----END PGP PUBLIC KEY BLOCK-----\n"
)

// sign is the test key's "signature" of a SHA256SUMS document.
func sign(sums []byte) []byte {
	return fmt.Appendf(nil, "desttest signature of %x\n", sha256.Sum256(sums))
}

// checker is the signature checker of mirror.Verifier in the suite: it
// accepts what sign made, with the test key among the kept keys.
type checker struct{}

func (checker) CheckSignature(doc, sig []byte, keys []string) (mirror.Signer, error) {
	if !slices.Contains(keys, signingKey) {
		return mirror.Signer{}, errors.New("desttest: the test key is not among the kept keys")
	}
	if !bytes.Equal(sig, sign(doc)) {
		return mirror.Signer{}, errors.New("desttest: not the test key's signature of this SHA256SUMS")
	}
	return mirror.Signer{KeyID: keyID, Fingerprint: strings.Repeat("0", 24) + keyID}, nil
}

// zipTime makes every archive the same bytes on every run.
var zipTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// zipOf returns a zip holding one file.
func zipOf(t testing.TB, name string, mode os.FileMode, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipTime}
	h.SetMode(mode)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.WriteString(w, content)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("desttest: zip %s: %v", name, err)
	}
	return buf.Bytes()
}

// upstream is a provider release as its origin serves it: a real zip per
// platform (staged in a file), one SHA256SUMS over all of them and the
// test key's signature of it. A publication takes some of its platforms,
// as a build publishes the platforms it was asked for.
type upstream struct {
	provider addrs.Provider
	version  addrs.Version
	files    map[addrs.Platform]string // staged
	data     map[addrs.Platform][]byte
	hashes   map[addrs.Platform]hashing.ArchiveSums
	sboms    map[addrs.Platform][]byte // what a build describes each package with
	sums     []byte
}

// newUpstream makes the release of p at version v for platforms; salt
// changes every package's bytes (an upstream that re-released v).
func newUpstream(t testing.TB, p addrs.Provider, v, salt string, platforms ...addrs.Platform) *upstream {
	t.Helper()
	ver, err := addrs.ParseVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{provider: p, version: ver, files: map[addrs.Platform]string{}, data: map[addrs.Platform][]byte{}, hashes: map[addrs.Platform]hashing.ArchiveSums{}, sboms: map[addrs.Platform][]byte{}}
	dir := t.TempDir()
	var lines []string
	for _, plat := range platforms {
		data := zipOf(t, fmt.Sprintf("terraform-provider-%s_v%s", p.Type, ver), 0o755,
			fmt.Sprintf("#!/bin/sh\necho %s %s %s %s\n", p, ver, plat, salt))
		name := layout.ArchiveName(p, ver, plat)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		hs, err := hashing.HashArchive(path, sum, hashing.DefaultZipLimits)
		if err != nil {
			t.Fatalf("desttest: %v", err)
		}
		u.files[plat], u.data[plat], u.hashes[plat] = path, data, hs
		u.sboms[plat] = fmt.Appendf(nil, "{\"desttest\": \"the SBOM of %s %s %s %s\"}\n", p, ver, plat, salt)
		lines = append(lines, fmt.Sprintf("%x  %s\n", sum, name))
	}
	slices.Sort(lines)
	u.sums = []byte(strings.Join(lines, ""))
	return u
}

// release is the publication of some of the upstream's platforms, in the
// order given, with the record a build keeps: the whole SHA256SUMS and
// its signature, the provenance of the platforms published, and each
// package's SBOM.
func (u *upstream) release(platforms ...addrs.Platform) layout.Release {
	r := u.bare(platforms...)
	for i, a := range r.Archives {
		r.Archives[i].SBOM = u.sboms[a.Platform]
	}
	return r
}

// bare is release without SBOMs, as a tfmirror that made none published.
func (u *upstream) bare(platforms ...addrs.Platform) layout.Release {
	rec := &layout.Record{
		Sums:      slices.Clone(u.sums),
		Signature: sign(u.sums),
		Provenance: layout.Provenance{
			Archives:    map[string]layout.ProvenanceArchive{},
			KeyID:       keyID,
			SigningKeys: []string{signingKey},
		},
	}
	r := layout.Release{Provider: u.provider, Version: u.version, Record: rec}
	for _, plat := range platforms {
		hs, ok := u.hashes[plat]
		if !ok {
			panic(fmt.Sprintf("desttest: %s %s has no %s package", u.provider, u.version, plat))
		}
		r.Archives = append(r.Archives, layout.Archive{Platform: plat, Staged: u.files[plat], Hashes: hs.All()})
		rec.Provenance.Archives[plat.String()] = layout.ProvenanceArchive{
			Filename: layout.ArchiveName(u.provider, u.version, plat),
			H1:       hs.H1Unpacked,
			ZH:       hs.ZH,
			Size:     int64(len(u.data[plat])),
		}
	}
	return r
}

// state is what the publication of some platforms adds to what clients
// see.
func (u *upstream) state(platforms ...addrs.Platform) state {
	s := state{versionKey(u.provider, u.version): ""}
	for _, plat := range platforms {
		s[packageKey(u.provider, u.version, plat)] = u.hashes[plat].ZH
	}
	return s
}

// held is what Held must return for the published platforms.
func (u *upstream) held(platforms ...addrs.Platform) []string {
	var out []string
	for _, plat := range platforms {
		out = append(out, heldString(layout.HeldPackage{
			Version: u.version, Platform: plat, ZH: u.hashes[plat].ZH, Size: int64(len(u.data[plat])), KeyID: keyID, SBOM: true,
		}))
	}
	slices.Sort(out)
	return out
}

func heldString(h layout.HeldPackage) string {
	return fmt.Sprintf("%s %s %s size %d key %q hashes-only %q sbom %v", h.Version, h.Platform, h.ZH, h.Size, h.KeyID, h.HashesOnly, h.SBOM)
}

// state is what clients see of a destination: every listed version
// ("provider version" → "") and every listed package ("provider version
// platform" → the zh: hash listed for it).
type state map[string]hashing.Hash

func versionKey(p addrs.Provider, v addrs.Version) string { return p.String() + " " + v.String() }

func packageKey(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return versionKey(p, v) + " " + plat.String()
}

// merge returns the union of states.
func merge(states ...state) state {
	out := state{}
	for _, s := range states {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

func (s state) String() string {
	var lines []string
	for k, v := range s {
		if v == "" {
			lines = append(lines, k)
		} else {
			lines = append(lines, k+" "+string(v))
		}
	}
	if len(lines) == 0 {
		return "(nothing)"
	}
	slices.Sort(lines)
	return strings.Join(lines, "; ")
}

// diff says how s differs from want: "" when it does not.
func (s state) diff(want state) string {
	var missing, extra, other []string
	for k, v := range want {
		switch w, ok := s[k]; {
		case !ok:
			missing = append(missing, k)
		case w != v:
			other = append(other, fmt.Sprintf("%s %s, not %s", k, w, v))
		}
	}
	for k := range s {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	var parts []string
	for _, p := range []struct {
		what  string
		items []string
	}{{"missing", missing}, {"not expected", extra}, {"other bytes", other}} {
		if len(p.items) > 0 {
			slices.Sort(p.items)
			parts = append(parts, p.what+": "+strings.Join(p.items, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// modulePackage is a module version's package made in the test, with
// its record.
type modulePackage struct {
	layout.ModuleRelease
	data []byte
}

// newModule makes a package of the suite's module at version v; salt
// changes its bytes.
func newModule(t testing.TB, v, salt string) modulePackage {
	t.Helper()
	data := zipOf(t, "main.tf", 0o644, fmt.Sprintf("# desttest module %s %s\nvariable \"name\" {}\n", v, salt))
	path := filepath.Join(t.TempDir(), "package.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return modulePackage{
		ModuleRelease: layout.ModuleRelease{
			Module:  module,
			Version: addrs.MustParseVersion(v),
			Staged:  path,
			Record: layout.ModuleRecord{
				SHA256:   fmt.Sprintf("%x", sum),
				Size:     int64(len(data)),
				Upstream: layout.ModuleUpstream{Location: "https://modules.example/" + v + ".zip", ArchiveSHA256: fmt.Sprintf("%x", sum)},
				Calls:    []layout.ModuleCall{},
			},
		},
		data: data,
	}
}
