package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// The OCI tests publish the fake origin's packages into a real registry
// (Debian's docker-registry, TLS from the test CA, htpasswd), with the
// ocistore API here and with `tfmirror build --out oci://...` in
// oci_build_test.go, and install them with real OpenTofu whose CLI
// configuration holds only an oci_mirror block.

// ociPackages: two providers of two hosts, the host platform and
// another one; foo has two versions so tofu must select by constraint.
var ociPackages = []pkgVersion{
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.1.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
	{host: "registry.test", ns: "acme", typ: "baz", version: "2.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
}

const ociMainTF = `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.0.0"
    }
    baz = {
      source = "registry.test/acme/baz"
    }
  }
}
`

// originRelease is a release as tfmirror publishes it after verifying
// it: the origin's archives staged in files, its SHA256SUMS, signature
// and signing key.
func originRelease(t *testing.T, f *fixture, p pkgVersion) layout.Release {
	t.Helper()
	prov, err := addrs.ParseProvider(p.addr())
	if err != nil {
		t.Fatal(err)
	}
	ver, err := addrs.ParseVersion(p.version)
	if err != nil {
		t.Fatal(err)
	}
	sig := fetchOrigin(t, f, fakeregistry.SignaturePath(p.ns, p.typ, p.version))
	rel := layout.Release{Provider: prov, Version: ver, Record: &layout.Record{
		Sums:      f.reg.SHA256SUMS(p.ns, p.typ, p.version),
		Signature: sig,
		Provenance: layout.Provenance{
			Archives:    map[string]layout.ProvenanceArchive{},
			KeyID:       f.reg.KeyID,
			SigningKeys: []string{f.reg.ArmoredKey},
		},
	}}
	dir := t.TempDir()
	for _, ps := range p.platforms {
		plat, err := addrs.ParsePlatform(ps)
		if err != nil {
			t.Fatal(err)
		}
		data := f.archive(t, p, ps)
		path := filepath.Join(dir, p.zip(ps))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h1, err := dirhash.HashZip(path, dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		zh := hashing.Hash("zh:" + sha256Hex(data))
		if !strings.Contains(string(rel.Record.Sums), sha256Hex(data)+"  "+p.zip(ps)) {
			t.Fatalf("the origin's SHA256SUMS does not list %s", p.zip(ps))
		}
		rel.Archives = append(rel.Archives, layout.Archive{Platform: plat, Staged: path, Hashes: []hashing.Hash{hashing.Hash(h1), zh}})
		rel.Record.Provenance.Archives[ps] = layout.ProvenanceArchive{Filename: p.zip(ps), H1: hashing.Hash(h1), ZH: zh, Size: int64(len(data))}
	}
	return rel
}

// fetchOrigin downloads a file of the fake origin.
func fetchOrigin(t *testing.T, f *fixture, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.reg.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.ca.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", path, resp.Status, err)
	}
	return data
}

// ociMirrorCLI is a CLI configuration with only an oci_mirror block, and
// credentials given by creds.
func ociMirrorCLI(template, creds string) string {
	return fmt.Sprintf("%s\nprovider_installation {\n  oci_mirror {\n    repository_template = %q\n  }\n}\n", creds, template)
}

// checkOCILock requires the lock file to hold, for every provider, exactly
// what an OCI mirror install records: the zh: of the installed platform's
// archive (the origin's, from its SHA256SUMS) and its h1:.
func checkOCILock(t *testing.T, f *fixture, wd, plat string, want map[string]pkgVersion) {
	t.Helper()
	for addr, hashes := range parseLockFile(t, filepath.Join(wd, ".terraform.lock.hcl")) {
		p := want[addr]
		archive := f.archive(t, p, plat)
		zh := "zh:" + sha256Hex(archive)
		if !strings.Contains(string(f.reg.SHA256SUMS(p.ns, p.typ, p.version)), sha256Hex(archive)) {
			t.Errorf("%s: %s is not in the origin's SHA256SUMS", addr, zh)
		}
		wantHashes := []string{dirHashOfArchive(t, archive), zh}
		slices.Sort(wantHashes)
		got := slices.Sorted(slices.Values(hashes))
		if !slices.Equal(got, wantHashes) {
			t.Errorf("lock file: %s hashes %q, want the origin's %q", addr, got, wantHashes)
		}
	}
}

// TestTofuInstallsFromOCIRegistry pushes releases of the fake origin into
// a real registry and installs two providers with tofu 1.12 and 1.10
// whose only installation method is an oci_mirror; the lock file holds
// the origin's zh: and h1: hashes. It also carries the releases through
// an OCI image layout, copied into the registry by oras-go's own layout
// reader (as `oras cp --from-oci-layout` does), and installs from there.
func TestTofuInstallsFromOCIRegistry(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	ctx := t.Context()
	f := &fixture{ca: testca.New(t), pkgs: ociPackages}
	f.reg = fakeregistry.New(t, f.ca)
	for _, p := range f.pkgs {
		f.reg.Add(p.ns, p.typ, p.version, p.platforms...)
	}
	srv := registrytest.StartWith(t, registrytest.Options{CA: f.ca})
	f.env = []string{"SSL_CERT_FILE=" + srv.CAFile}

	template := srv.Host + "/providers/${hostname}/${namespace}/${type}"
	store, err := ocistore.New(ctx, "oci://"+template, ocistore.Config{Environ: []string{
		"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + srv.DockerConfigDir, "HOME=" + t.TempDir(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := t.TempDir()
	layoutStore, err := ocistore.New(ctx, "oci-layout://"+layoutDir, ocistore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var releases []layout.Release
	for _, p := range f.pkgs {
		rel := originRelease(t, f, p)
		releases = append(releases, rel)
		for _, s := range []*ocistore.Store{store, layoutStore} {
			rep, err := s.Push(ctx, rel, ocistore.PushOptions{})
			if err != nil {
				t.Fatalf("push %s %s into %s: %v", p.addr(), p.version, s.Location(), err)
			}
			t.Logf("pushed %s %s into %s: %+v", p.addr(), p.version, s.Location(), rep)
		}
	}
	// What the registry holds reads back as the origin's.
	for _, rel := range releases {
		got, found, err := store.Release(ctx, rel.Provider, rel.Version)
		if err != nil || !found || len(got.Archives) != 2 {
			t.Fatalf("Release %s %s: %+v %v %v", rel.Provider, rel.Version, got, found, err)
		}
		rec, err := store.ReadRecord(ctx, rel.Provider, rel.Version)
		if err != nil || string(rec.Sums) != string(rel.Record.Sums) || string(rec.Signature) != string(rel.Record.Signature) {
			t.Fatalf("ReadRecord %s %s: %v", rel.Provider, rel.Version, err)
		}
	}
	// The layout, into the registry under another prefix.
	for _, p := range f.pkgs {
		copyFromLayout(t, filepath.Join(layoutDir, p.host, p.ns, p.typ), p.version, srv, "fromlayout/"+p.host+"/"+p.ns+"/"+p.typ)
	}

	want := map[string]pkgVersion{
		"registry.opentofu.org/hashicorp/foo": f.pkgs[0],
		"registry.test/acme/baz":              f.pkgs[2],
	}
	dockerConfigFile := fmt.Sprintf("oci_default_credentials {\n  docker_style_config_files = [%q]\n}\n", srv.DockerConfig)
	explicit := fmt.Sprintf("oci_credentials %q {\n  username = %q\n  password = %q\n}\n", srv.Host, srv.Username, srv.Password)
	for _, tc := range []struct {
		name, template, creds string
		bin                   func(testing.TB) string
	}{
		{"tofu 1.12 docker config", template, dockerConfigFile, tofuBin},
		{"tofu 1.10 oci_credentials", template, explicit, oldTofuBin},
		{"tofu 1.12 from layout", srv.Host + "/fromlayout/${hostname}/${namespace}/${type}", dockerConfigFile, tofuBin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := tc.bin(t)
			wd := t.TempDir()
			writeFile(t, filepath.Join(wd, "main.tf"), ociMainTF)
			before := len(srv.Requests(t))
			initThroughMirror(t, f, bin, wd, ociMirrorCLI(tc.template, tc.creds), plat, want)
			checkOCILock(t, f, wd, plat, want)
			// tofu read the registry (and wrote nothing to it).
			var gets int
			for _, r := range srv.Requests(t)[before:] {
				switch r.Method {
				case http.MethodGet, http.MethodHead:
					gets++
				default:
					t.Errorf("tofu init wrote to the registry: %s %s", r.Method, r.URI)
				}
			}
			if gets == 0 {
				t.Error("tofu init made no request to the registry")
			}
		})
	}

	// Without credentials the registry refuses tofu, which says so: the
	// packages are not readable anonymously.
	t.Run("tofu without credentials", func(t *testing.T) {
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), ociMainTF)
		out, err := runTofu(t, tofuBin(t), wd, ociMirrorCLI(template, "oci_default_credentials {\n  discover_ambient_credentials = false\n}\n"), f.env, "init", "-input=false")
		if err == nil {
			t.Fatalf("tofu init without credentials succeeded:\n%s", out)
		}
		if !strings.Contains(out, "credential") {
			t.Errorf("tofu init without credentials failed for another reason:\n%s", out)
		}
	})
}

// copyFromLayout copies tag of the OCI layout at dir, with its referrers,
// into repository of srv: with the oras CLI ($TFMIRROR_ORAS, which
// scripts/test builds), an independent reader of the layout, else with
// oras-go's read-only layout store.
func copyFromLayout(t *testing.T, dir, tag string, srv *registrytest.Server, repository string) {
	t.Helper()
	ctx := t.Context()
	if bin := os.Getenv("TFMIRROR_ORAS"); bin != "" {
		cmd := exec.CommandContext(ctx, bin, "cp", "--recursive", "--from-oci-layout", dir+":"+tag,
			"--to-ca-file", srv.CAFile, "--to-registry-config", srv.DockerConfig, srv.Host+"/"+repository+":"+tag)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("oras cp %s:%s: %v\n%s", dir, tag, err, out)
		}
		return
	}
	if isCI() {
		t.Fatal("TFMIRROR_ORAS is not set: scripts/test builds the oras CLI")
	}
	src, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatalf("read the layout %s: %v", dir, err)
	}
	dst, err := remote.NewRepository(srv.Host + "/" + repository)
	if err != nil {
		t.Fatal(err)
	}
	dst.Client = &auth.Client{
		Client:     srv.CA.Client(),
		Credential: auth.StaticCredential(srv.Host, auth.Credential{Username: srv.Username, Password: srv.Password}),
	}
	if _, err := oras.ExtendedCopy(ctx, src, tag, dst, tag, oras.DefaultExtendedCopyOptions); err != nil {
		t.Fatalf("copy %s:%s into %s: %v", dir, tag, repository, err)
	}
}
