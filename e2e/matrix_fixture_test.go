package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/compat"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/gitserver"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// matrixFixture is what every cell of the compatibility matrix installs
// from, made once: one origin (a fake registry with providers of both
// clients' default hosts and modules, and a git server), and one tfmirror
// build per kind of output, served by nginx where clients read HTTPS.
type matrixFixture struct {
	ca   *testca.CA
	reg  *fakeregistry.Registry
	git  *gitserver.Server
	oci  *registrytest.Server
	env  []string // SSL_CERT_FILE and GIT_SSL_CAINFO, for tfmirror and the clients
	work string   // tfmirror's working directory: mirror.hcl, modconfig/

	platforms []string     // every platform the origin publishes and the mirrors hold
	installed []pkgVersion // what the matrix configuration selects (the newest 1.x)

	site, packed, unpacked string            // the build's outputs
	ociTemplate            string            // host/prefix/${hostname}/${namespace}/${type}
	base                   string            // the site, served with examples/nginx/tfmirror.conf
	plainBase              string            // the site, served as plain files (no X-Terraform-Get)
	originModules          map[string]string // what tofu init installs from the origin, by path
	toolLocks              map[string][]byte // what tfmirror lock writes, by compat.Method ID
}

// matrixProvidersTF requires one provider of OpenTofu's default registry
// host and one of Terraform's, with their hosts written out so that every
// client reads the same addresses. Terraform's is not in the hashicorp
// namespace: OpenTofu rewrites every registry.terraform.io/hashicorp/*
// entry of a lock file to registry.opentofu.org (UpgradeFromPredecessorProject
// in its depsfile), so init -lockfile=readonly fails on any such file,
// whoever wrote it.
const matrixProvidersTF = `terraform {
  required_providers {
    foo = {
      source  = "registry.opentofu.org/hashicorp/foo"
      version = "~> 1.0"
    }
    bar = {
      source  = "registry.terraform.io/acme/bar"
      version = "~> 1.0"
    }
  }
}
`

// matrixPlatforms is the host's platform and four others, four in all on
// linux_amd64.
func matrixPlatforms() []string {
	p := []string{hostPlatform(), "linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"}
	slices.Sort(p)
	return slices.Compact(p)
}

func newMatrixFixture(t *testing.T) *matrixFixture {
	t.Helper()
	f := &matrixFixture{ca: testca.New(t), platforms: matrixPlatforms()}
	f.reg = fakeregistry.New(t, f.ca)
	f.git = gitserver.Start(t, f.ca)
	f.oci = registrytest.StartWith(t, registrytest.Options{CA: f.ca})
	caFile, _, _ := f.ca.WriteFiles(t, t.TempDir(), "localhost", "127.0.0.1")
	f.env = []string{"SSL_CERT_FILE=" + caFile, "GIT_SSL_CAINFO=" + caFile}

	for _, host := range []string{"registry.opentofu.org", "registry.terraform.io"} {
		ns, typ := "hashicorp", "foo"
		if host == "registry.terraform.io" {
			ns, typ = "acme", "bar"
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			p := pkgVersion{host: host, ns: ns, typ: typ, version: v, platforms: f.platforms}
			f.reg.Add(p.ns, p.typ, p.version, p.platforms...)
			if v == "1.1.0" {
				f.installed = append(f.installed, p)
			}
		}
	}
	publishModules(t, f.reg, f.git)

	f.work = t.TempDir()
	writeFile(t, filepath.Join(f.work, "modconfig", "main.tf"), moduleRootTF)
	writeFile(t, filepath.Join(f.work, "mirror.hcl"), f.manifest(hashicorpOnTerraformProvider))
	writeFile(t, filepath.Join(f.work, "mirror-oci.hcl"), f.manifest(""))
	f.ociTemplate = f.oci.Host + "/mirror/${hostname}/${namespace}/${type}"
	f.build(t)
	f.base = startNginxServer(t, f.site, f.ca, exampleServerBlock(t))
	f.plainBase = startNginx(t, f.site, f.ca)
	f.originModules = initModules(t, tofuBin(t), filepath.Join(f.work, "modconfig"), moduleHostCLI(f.reg.ModulesURL), f.env)
	f.writeToolLocks(t)
	return f
}

// hashicorpOnTerraformProvider is the manifest block of the provider
// hashicorpOnTerraformTF requires.
const hashicorpOnTerraformProvider = `
provider "registry.terraform.io/hashicorp/foo" {
  versions = "1.1.0"
}
`

// manifest is the matrix's manifest, with extra blocks.
func (f *matrixFixture) manifest(extra string) string {
	quoted := make([]string, len(f.platforms))
	for i, p := range f.platforms {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf(`platforms = [%[1]s]

provider "registry.opentofu.org/hashicorp/foo" {
  versions = ">= 1.0.0"
}

provider "registry.terraform.io/acme/bar" {
  versions = ">= 1.0.0"
}
%[5]s
configuration "modconfig" {}

host "registry.opentofu.org" {
  services = { "providers.v1" = %[2]q, "modules.v1" = %[3]q }
}

host "registry.terraform.io" {
  services = { "providers.v1" = %[2]q }
}

settings {
  allowed_location_hosts = [%[4]q]
}
`, strings.Join(quoted, ", "), f.reg.ServicesURL, f.reg.ModulesURL, strings.TrimPrefix(f.git.URL, "https://"), extra)
}

// build writes every output the matrix installs from: the network mirror
// with its registry replica and static module registry, the same into the
// OCI registry, and packed and unpacked filesystem mirrors. The OCI
// registry does not get registry.terraform.io/hashicorp/foo, which only
// the network mirror's lock-only cell installs: pushing the same archives
// into two repositories at once once failed in docker-registry with
// "manifest blob unknown" (not diagnosed).
func (f *matrixFixture) build(t *testing.T) {
	t.Helper()
	f.site = filepath.Join(f.work, "site")
	f.packed = filepath.Join(f.work, "packed")
	f.unpacked = filepath.Join(f.work, "unpacked")
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+f.oci.DockerConfigDir)
	for _, args := range [][]string{
		{"build", "--registry-replica", "--out", f.site},
		// modules go into an OCI registry only beside a tree
		{"build", "--config", "mirror-oci.hcl", "--out", filepath.Join(f.work, "site-oci"), "--out", "oci://" + f.ociTemplate},
		{"build", "--no-modules", "--layout", "packed", "--out", f.packed},
		{"build", "--no-modules", "--layout", "unpacked", "--out", f.unpacked},
	} {
		stdout, stderr, code := runTfmirror(t, f.work, env, args...)
		if code != 0 {
			t.Fatalf("tfmirror %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// lockSource is what `tfmirror lock --mirror` reads for a provider method
// (compat.Method.LockFrom).
func (f *matrixFixture) lockSource(method string) string {
	switch method {
	case "filesystem_packed":
		return f.packed
	case "filesystem_unpacked":
		return f.unpacked
	case "oci_mirror":
		return "oci://" + f.ociTemplate
	}
	return f.base
}

// writeToolLocks runs `tfmirror lock --mirror` once for every provider
// method's output and checks each file holds every platform's h1: and zh:
// (compat.AllH1AllZH) for both providers.
func (f *matrixFixture) writeToolLocks(t *testing.T) {
	t.Helper()
	f.toolLocks = map[string][]byte{}
	bySource := map[string][]byte{}
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+f.oci.DockerConfigDir)
	for _, m := range compat.Methods {
		if m.Modules || m.LockOnly {
			continue
		}
		src := f.lockSource(m.ID)
		if lock, ok := bySource[src]; ok {
			f.toolLocks[m.ID] = lock
			continue
		}
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), matrixProvidersTF)
		stdout, stderr, code := runTfmirror(t, wd, env, "lock", "--mirror", src, ".")
		if code != 0 {
			t.Fatalf("tfmirror lock --mirror %s: exit %d\nstdout:\n%s\nstderr:\n%s", src, code, stdout, stderr)
		}
		path := filepath.Join(wd, ".terraform.lock.hcl")
		f.checkLock(t, "tfmirror lock --mirror "+src, path, compat.AllH1AllZH, compat.AllH1AllZH, compat.OpenTofu)
		bySource[src], f.toolLocks[m.ID] = mustRead(t, path), mustRead(t, path)
	}
}

// ociCredentials is the CLI configuration block that gives OpenTofu the
// registry's credentials.
func (f *matrixFixture) ociCredentials() string {
	return fmt.Sprintf("oci_default_credentials {\n  docker_style_config_files = [%q]\n}\n", f.oci.DockerConfig)
}
