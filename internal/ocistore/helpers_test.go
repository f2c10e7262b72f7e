package ocistore_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/layout"
)

// makeZip is a provider package: one executable whose content names the
// package, plus salt (so tests can make another package for the same
// platform).
func makeZip(t testing.TB, p addrs.Provider, v, plat, salt string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: fmt.Sprintf("terraform-provider-%s_v%s", p.Type, v), Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "#!/bin/sh\necho %s %s %s %s\n", p, v, plat, salt)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testRelease is a release made in the test: real zips staged in files,
// a made-up SHA256SUMS, signature and keys.
type testRelease struct {
	layout.Release
	zips map[string][]byte
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newRelease makes a release of p at version v for platforms. salt
// changes the packages' bytes.
func newRelease(t testing.TB, p addrs.Provider, v string, salt string, platforms ...string) testRelease {
	t.Helper()
	ver, err := addrs.ParseVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := testRelease{Release: layout.Release{Provider: p, Version: ver}, zips: map[string][]byte{}}
	rec := &layout.Record{Provenance: layout.Provenance{
		Archives:    map[string]layout.ProvenanceArchive{},
		KeyID:       "0123456789ABCDEF",
		SigningKeys: []string{"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmade up for " + p.String() + "\n-----END PGP PUBLIC KEY BLOCK-----\n"},
	}}
	var sums []string
	for _, ps := range platforms {
		plat, err := addrs.ParsePlatform(ps)
		if err != nil {
			t.Fatal(err)
		}
		data := makeZip(t, p, v, ps, salt)
		name := layout.ArchiveName(p, ver, plat)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h1, err := dirhash.HashZip(path, dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		zh := hashing.Hash("zh:" + sha256Hex(data))
		tr.zips[ps] = data
		tr.Archives = append(tr.Archives, layout.Archive{Platform: plat, Staged: path, Hashes: []hashing.Hash{hashing.Hash(h1), zh}})
		rec.Provenance.Archives[ps] = layout.ProvenanceArchive{Filename: name, H1: hashing.Hash(h1), ZH: zh, Size: int64(len(data))}
		sums = append(sums, sha256Hex(data)+"  "+name+"\n")
	}
	slices.Sort(sums)
	rec.Sums = []byte(strings.Join(sums, ""))
	rec.Signature = []byte("-----BEGIN PGP SIGNATURE-----\n\nmade up signature " + salt + "\n-----END PGP SIGNATURE-----\n")
	tr.Record = rec
	return tr
}

// registryEnviron is what a client needs for srv: its CA, its Docker
// config file, and an empty home.
func registryEnviron(t testing.TB, srv *registrytest.Server) []string {
	t.Helper()
	return []string{
		"SSL_CERT_FILE=" + srv.CAFile,
		"DOCKER_CONFIG=" + srv.DockerConfigDir,
		"HOME=" + t.TempDir(),
	}
}

// template is the repository template of the tests in srv.
func template(srv *registrytest.Server) string {
	return srv.Host + "/tf/${hostname}/${namespace}/${type}"
}

// pushedFoo starts a registry and pushes hashicorp/foo 1.0.0 for
// linux_amd64 into it.
func pushedFoo(t *testing.T) (*registrytest.Server, *ocistore.Store, testRelease) {
	t.Helper()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64")
	if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return srv, s, rel
}

func openStore(t testing.TB, ref string, env []string) *ocistore.Store {
	t.Helper()
	s, err := ocistore.New(context.Background(), ref, ocistore.Config{Environ: env})
	if err != nil {
		t.Fatalf("ocistore.New(%q): %v", ref, err)
	}
	return s
}

// rawGet reads a registry URL path with the server's credentials,
// independently of the code under test.
func rawGet(t testing.TB, srv *registrytest.Server, path, accept string) ([]byte, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(srv.Username, srv.Password)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.CA.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
	}
	return body, resp.Header
}

func readAll(t testing.TB, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
