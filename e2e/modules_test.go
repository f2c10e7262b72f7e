package e2e

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/gitserver"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// moduleFixture is an origin module registry (the fake registry), a git
// server and a configuration that calls registry modules in every form
// the registries really return, and a build of its mirror.
type moduleFixture struct {
	ca     *testca.CA
	reg    *fakeregistry.Registry
	git    *gitserver.Server
	env    []string
	work   string
	site   string
	config string
}

const moduleRootTF = `module "net" {
  source  = "acme/net/aws"
  version = "1.0.0"
}

module "mono" {
  source  = "acme/mono/aws"
  version = "~> 1.0"
}

module "pinned" {
  source  = "acme/pinned/aws"
  version = "1.0.0"
}

module "hdr" {
  source = "acme/hdr/aws"
}

output "net" {
  value = module.net.cidr
}
`

// newModuleFixture makes the origin (publishModules) and a manifest that
// mirrors what moduleRootTF calls.
func newModuleFixture(t *testing.T) *moduleFixture {
	t.Helper()
	f := &moduleFixture{ca: testca.New(t)}
	f.reg = fakeregistry.New(t, f.ca)
	f.git = gitserver.Start(t, f.ca)
	caFile, _, _ := f.ca.WriteFiles(t, t.TempDir(), "localhost", "127.0.0.1")
	f.env = []string{"SSL_CERT_FILE=" + caFile, "GIT_SSL_CAINFO=" + caFile}
	publishModules(t, f.reg, f.git)

	f.work = t.TempDir()
	f.site = filepath.Join(f.work, "site")
	f.config = filepath.Join(f.work, "config")
	writeFile(t, filepath.Join(f.config, "main.tf"), moduleRootTF)
	writeFile(t, filepath.Join(f.work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64"]

configuration "config" {}

host "registry.opentofu.org" {
  services = { "modules.v1" = %q }
}

# The git server runs on another port of 127.0.0.1, a loopback address:
# the registry may send tfmirror there only because the manifest says so.
settings {
  allowed_location_hosts = [%q]
}
`, f.reg.ModulesURL, strings.TrimPrefix(f.git.URL, "https://")))
	return f
}

// publishModules publishes on reg (and git) every module moduleRootTF
// calls, in every form the registries really return:
//   - acme/net/aws 1.0.0: git::https at a tag; it calls acme/sub/aws ~> 2.0;
//   - acme/sub/aws 2.0.0 and 2.1.0: relative locations of .tar.gz archives
//     with one top-level directory, named as the subdirectory;
//   - acme/mono/aws 1.0.0: a .zip with a //modules/vpc subdirectory whose
//     module calls ../shared;
//   - acme/pinned/aws 1.0.0: git::https at an untagged commit;
//   - acme/hdr/aws 1.0.0: the location only in X-Terraform-Get (a 204).
func publishModules(t *testing.T, reg *fakeregistry.Registry, git *gitserver.Server) {
	t.Helper()
	git.Commit(t, "net", map[string]string{
		"main.tf":   "variable \"cidr\" {\n  default = \"10.0.0.0/16\"\n}\n\nmodule \"sub\" {\n  source  = \"acme/sub/aws\"\n  version = \"~> 2.0\"\n}\n\noutput \"cidr\" {\n  value = var.cidr\n}\n",
		"README.md": "net 1.0.0\n",
	}, "v1.0.0")
	reg.AddModule("acme/net/aws", "1.0.0", "git::"+git.RepoURL("net")+"?ref=v1.0.0", false)

	for _, v := range []string{"2.0.0", "2.1.0"} {
		top := "acme-sub-" + v + "/"
		reg.AddFile("sub-"+v+".tar.gz", targz.Pack(t, []targz.Entry{
			targz.Regular(top+"main.tf", "output \"v\" {\n  value = \""+v+"\"\n}\n"),
			targz.Regular(top+"examples/basic/main.tf", "# example\n"),
		}, nil))
		reg.AddModule("acme/sub/aws", v, "../../../../../../files/sub-"+v+".tar.gz//"+strings.TrimSuffix(top, "/"), false)
	}

	reg.AddFile("mono.zip", zipbuild.Bytes(t,
		zipbuild.File("modules/vpc/main.tf", "module \"shared\" {\n  source = \"../shared\"\n}\n"),
		zipbuild.File("modules/shared/main.tf", "output \"shared\" {\n  value = \"yes\"\n}\n"),
		zipbuild.File("README.md", "mono\n"),
	))
	reg.AddModule("acme/mono/aws", "1.0.0", reg.URL+"/files/mono.zip//modules/vpc", false)

	pinned := git.Commit(t, "pinned", map[string]string{"main.tf": "# pinned 1.0.0\n"}, "")
	git.Commit(t, "pinned", map[string]string{"main.tf": "# a later commit\n"}, "")
	reg.AddModule("acme/pinned/aws", "1.0.0", "git::"+git.RepoURL("pinned")+"?ref="+pinned, false)

	reg.AddFile("hdr.zip", zipbuild.Bytes(t, zipbuild.File("main.tf", "# hdr\n")))
	reg.AddModule("acme/hdr/aws", "1.0.0", "/files/hdr.zip", true)
}

func (f *moduleFixture) build(t *testing.T, args ...string) (string, int) {
	t.Helper()
	stdout, stderr, code := runTfmirror(t, f.work, f.env, append([]string{"build"}, args...)...)
	return stdout + stderr, code
}

// originRequests counts what reached the origin: module registry
// requests and git requests.
func (f *moduleFixture) originRequests() int {
	return len(f.reg.Requests()) + f.git.Requests()
}

func moduleHostCLI(modulesURL string) string {
	return fmt.Sprintf("host \"registry.opentofu.org\" {\n  services = { \"modules.v1\" = %q }\n}\n", modulesURL)
}

// initModules runs "tofu init" on a copy of the configuration and returns
// the installed module tree (without git's own files) by path.
func initModules(t *testing.T, bin, config, cli string, env []string) map[string]string {
	t.Helper()
	wd := t.TempDir()
	data, err := os.ReadFile(filepath.Join(config, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wd, "main.tf"), string(data))
	out, err := runTofu(t, bin, wd, cli, env, "init", "-input=false")
	if err != nil {
		t.Fatalf("tofu init: %v\n%s", err, out)
	}
	tree := treeHashes(t, filepath.Join(wd, ".terraform", "modules"))
	for p := range tree {
		if p == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
			delete(tree, p)
		}
	}
	return tree
}

// TestModulesInstallThroughNginx builds the module mirror of a
// configuration, serves it with the example nginx configuration, and runs
// "tofu init" (1.12 and 1.10) with only a host block pointing modules.v1
// at it: every module installs, including those a mirrored module calls,
// the module tree is the one "tofu init" installs from the origin, and no
// request reaches the origin registry or the git server. A second build
// fetches nothing.
func TestModulesInstallThroughNginx(t *testing.T) {
	f := newModuleFixture(t)
	out, code := f.build(t)
	if code != 0 {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	for _, want := range []string{"mirrored  module acme/net/aws 1.0.0", "mirrored  module acme/sub/aws 2.1.0", "mirrored  module acme/mono/aws 1.0.0",
		"mirrored  module acme/pinned/aws 1.0.0", "mirrored  module acme/hdr/aws 1.0.0", "modules: 5 mirrored", `"modules.v1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("build output lacks %q", want)
		}
	}
	if strings.Contains(out, "acme/sub/aws 2.0.0") {
		t.Error("the build mirrored acme/sub/aws 2.0.0, which the call's ~> 2.0 does not select (2.1.0 is newer)")
	}

	origin := initModules(t, tofuBin(t), f.config, moduleHostCLI(f.reg.ModulesURL), f.env)
	if len(origin) == 0 {
		t.Fatal("tofu init from the origin installed no module")
	}

	base := startNginxServer(t, f.site, f.ca, exampleServerBlock(t))
	mirrorCLI := moduleHostCLI(base + "replica/registry.opentofu.org/v1/modules/")
	before := f.originRequests()
	for _, bin := range []string{tofuBin(t), oldTofuBin(t)} {
		got := initModules(t, bin, f.config, mirrorCLI, f.env)
		if diff := diffTrees(origin, got); diff != "" {
			t.Errorf("%s: the module tree installed from the mirror differs from the origin's:\n%s", filepath.Base(bin), diff)
		}
	}
	if n := f.originRequests() - before; n != 0 {
		t.Errorf("installing from the mirror made %d requests to the origin registry or the git server", n)
	}

	// Terraform reads the location only from X-Terraform-Get: the example
	// nginx configuration sends it for every version, subdirectory included.
	checkTerraformGet(t, f.ca.Client(), base+"replica/registry.opentofu.org/v1/modules/acme/mono/aws/1.0.0/download",
		"../../../../../../../../modules/registry.opentofu.org/acme/mono/aws/1.0.0.zip//modules/vpc")

	gitBefore, downloads := f.git.Requests(), f.reg.ModuleRequests()
	out, code = f.build(t)
	if code != 0 || !strings.Contains(out, "modules: 0 mirrored, 5 already present, 0 failed") {
		t.Fatalf("second build: exit %d, want 0 and every module present\n%s", code, out)
	}
	if d := countNew(downloads, f.reg.ModuleRequests()); d != 0 {
		t.Errorf("the second build asked for %d download locations again", d)
	}
	if n := f.git.Requests() - gitBefore; n != 0 {
		t.Errorf("the second build made %d requests to the git server", n)
	}
}

// countNew is how many more requests now holds than before.
func countNew(before, now map[string]int) int {
	n := 0
	for k, v := range now {
		n += v - before[k]
	}
	return n
}

var terraformGetRe = regexp.MustCompile(`^\S+$`)

func checkTerraformGet(t *testing.T, client *http.Client, url, want string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Location string `json:"location"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	got := resp.Header.Get("X-Terraform-Get")
	if resp.StatusCode != http.StatusOK || got != want || doc.Location != want || !terraformGetRe.MatchString(got) {
		t.Fatalf("GET %s: %s, X-Terraform-Get %q, location %q; want 200 and %q in both", url, resp.Status, got, doc.Location, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q, want application/json", url, ct)
	}
}

// TestModuleMovedUpstreamIsReported moves a mirrored version's tag to other
// content upstream: a build with --recheck-modules reports it, naming the
// module, the version and both commits, exits 3, and leaves the published
// package and documents as they were.
func TestModuleMovedUpstreamIsReported(t *testing.T) {
	f := newModuleFixture(t)
	if out, code := f.build(t); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	before := treeHashes(t, f.site)
	moved := f.git.Commit(t, "net", map[string]string{"main.tf": "# someone re-tagged v1.0.0\n"}, "v1.0.0")

	out, code := f.build(t)
	if code != 0 {
		t.Fatalf("a build without --recheck-modules: exit %d, want 0 (it does not fetch a mirrored version again)\n%s", code, out)
	}
	out, code = f.build(t, "--recheck-modules")
	if code != 3 || !strings.Contains(out, "module acme/net/aws 1.0.0") || !strings.Contains(out, moved) ||
		!strings.Contains(out, "never replaces a published module version") {
		t.Fatalf("--recheck-modules after a moved tag: exit %d, want 3 and an error naming the module, version and new commit\n%s", code, out)
	}
	if diff := diffTrees(before, treeHashes(t, f.site)); diff != "" {
		t.Errorf("the mirror changed:\n%s", diff)
	}
}

// TestHostileModuleArchiveIsRefused serves module archives that escape
// their directory, name an absolute path, link out of the package or are
// larger than allowed: each build fails naming the module and version, and
// nothing of it is published.
func TestHostileModuleArchiveIsRefused(t *testing.T) {
	for name, entries := range map[string][]targz.Entry{
		"path escape":   {targz.Regular("main.tf", "#"), targz.Regular("../escape.tf", "#")},
		"absolute path": {targz.Regular("/etc/evil.tf", "#")},
		"symlink out":   {targz.Regular("main.tf", "#"), {Header: tar.Header{Typeflag: tar.TypeSymlink, Name: "passwd", Linkname: "../../../../etc/passwd"}}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newModuleFixture(t)
			f.reg.AddFile("evil.tar.gz", targz.Pack(t, entries, nil))
			f.reg.AddModule("acme/evil/aws", "1.0.0", "/files/evil.tar.gz", false)
			writeFile(t, filepath.Join(f.config, "main.tf"), "module \"evil\" {\n  source  = \"acme/evil/aws\"\n  version = \"1.0.0\"\n}\n")
			out, code := f.build(t)
			if code == 0 || !strings.Contains(out, "module acme/evil/aws 1.0.0") {
				t.Fatalf("build: exit %d, want a failure naming the module and version\n%s", code, out)
			}
			if _, err := os.Stat(filepath.Join(f.site, "modules", "registry.opentofu.org", "acme", "evil")); !os.IsNotExist(err) {
				t.Errorf("something of the hostile module was published: %v", err)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		f := newModuleFixture(t)
		noise := make([]byte, 256<<10)
		_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
		f.reg.AddFile("big.zip", zipbuild.Bytes(t, zipbuild.File("main.tf", "#"), zipbuild.File("blob.bin", string(noise))))
		f.reg.AddModule("acme/big/aws", "1.0.0", "/files/big.zip", false)
		writeFile(t, filepath.Join(f.config, "main.tf"), "module \"big\" {\n  source = \"acme/big/aws\"\n}\n")
		out, code := f.build(t, "--max-archive-bytes", "65536")
		if code == 0 || !strings.Contains(out, "module acme/big/aws 1.0.0") {
			t.Fatalf("build: exit %d, want a failure naming the module and version\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(f.site, "modules", "registry.opentofu.org", "acme", "big")); !os.IsNotExist(err) {
			t.Errorf("something of the oversized module was published: %v", err)
		}
	})
}

// TestModuleBundleRoundTrip carries the module mirror in a bundle to a
// second tree, which "tofu init" (and "terraform init", where a binary is
// present) then installs every module from, served by "tfmirror serve"
// (which sends X-Terraform-Get), each client configured with nothing but
// the bundle's own cli-config snippet for it, its placeholder replaced.
func TestModuleBundleRoundTrip(t *testing.T) {
	f := newModuleFixture(t)
	if out, code := f.build(t); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	bundle := filepath.Join(t.TempDir(), "mirror.tar.gz")
	if stdout, stderr, code := runTfmirror(t, f.work, f.env, "bundle", "create", f.site, "--out", bundle); code != 0 || !strings.Contains(stdout, "5 modules (5 versions)") {
		t.Fatalf("bundle create: exit %d, want 0 and 5 modules bundled\n%s%s", code, stdout, stderr)
	}
	gapped := filepath.Join(t.TempDir(), "gapped")
	extras := filepath.Join(t.TempDir(), "extras")
	stdout, stderr, code := runTfmirror(t, f.work, f.env, "bundle", "import", bundle, "--out", gapped, "--extras", extras)
	if code != 0 || !strings.Contains(stdout, "5 modules (5 versions)") {
		t.Fatalf("bundle import: exit %d, want 0 and 5 modules\n%s%s", code, stdout, stderr)
	}
	_, certFile, keyFile := f.ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startTfmirror(t, f.work, f.env, "serve", gapped, "--listen", addr, "--cert", certFile, "--key", keyFile)
	waitForTLS(t, addr)
	base := "https://" + addr + "/"
	checkTerraformGet(t, f.ca.Client(), base+"replica/registry.opentofu.org/v1/modules/acme/mono/aws/1.0.0/download",
		"../../../../../../../../modules/registry.opentofu.org/acme/mono/aws/1.0.0.zip//modules/vpc")

	before := f.originRequests()
	install := func(t *testing.T, bin, snippet string) {
		data, err := os.ReadFile(filepath.Join(extras, "cli-config", snippet))
		if err != nil {
			t.Fatalf("bundle import --extras wrote no %s: %v", snippet, err)
		}
		cli := strings.ReplaceAll(string(data), "https://MIRROR.EXAMPLE/", base)
		tree := initModules(t, bin, f.config, cli, f.env)
		for _, want := range []string{"modules.json", "mono/modules/vpc/main.tf", "mono/modules/shared/main.tf", "net/main.tf", "net.sub/acme-sub-2.1.0/main.tf", "pinned/main.tf", "hdr/main.tf"} {
			if _, ok := tree[want]; !ok {
				t.Errorf("%s init with %s from the imported mirror did not install %s", filepath.Base(bin), snippet, want)
			}
		}
	}
	t.Run("tofu", func(t *testing.T) { install(t, tofuBin(t), "tofu-modules.tfrc") })
	t.Run("terraform", func(t *testing.T) { install(t, terraformBin(t), "terraform-modules.tfrc") })
	if n := f.originRequests() - before; n != 0 {
		t.Errorf("installing from the imported mirror made %d requests to the origin", n)
	}
}

// TestTerraformInstallsModulesThroughNginx installs the modules with
// Terraform (where a binary is present: it cannot be built here), which
// reads each location from the X-Terraform-Get header the example nginx
// configuration sends. Terraform reads an address without a host as
// registry.terraform.io, so its host block points that host's modules.v1
// at the mirror's registry.opentofu.org replica, as docs/modules.md says; only
// modules.json (which names the host) differs from OpenTofu's tree.
func TestTerraformInstallsModulesThroughNginx(t *testing.T) {
	terraform := terraformBin(t)
	f := newModuleFixture(t)
	if out, code := f.build(t); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	origin := initModules(t, tofuBin(t), f.config, moduleHostCLI(f.reg.ModulesURL), f.env)
	base := startNginxServer(t, f.site, f.ca, exampleServerBlock(t))
	before := f.originRequests()
	cli := strings.Replace(moduleHostCLI(base+"replica/registry.opentofu.org/v1/modules/"), `host "registry.opentofu.org"`, `host "registry.terraform.io"`, 1)
	got := initModules(t, terraform, f.config, cli, f.env)
	delete(origin, "modules.json")
	delete(got, "modules.json")
	if diff := diffTrees(origin, got); diff != "" {
		t.Errorf("terraform: the module tree differs from the one tofu installs from the origin:\n%s", diff)
	}
	if n := f.originRequests() - before; n != 0 {
		t.Errorf("installing with terraform made %d requests to the origin", n)
	}
}

// TestModulesFromOCIRegistry publishes the modules into an OCI registry as
// OpenTofu module packages too, with --oci-module-locations: the module
// registry's download documents (served by nginx) point at the packages
// by digest, and tofu installs every module from the registry, the same
// tree as from the origin, with no request to the origin. A second build
// uploads no blob.
func TestModulesFromOCIRegistry(t *testing.T) {
	f := newModuleFixture(t)
	srv := registrytest.StartWith(t, registrytest.Options{CA: f.ca})
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+srv.DockerConfigDir)
	template := srv.Host + "/modules/${hostname}/${namespace}/${type}"
	args := []string{"build", "--out", "site", "--out", "oci://" + template, "--oci-module-locations"}
	stdout, stderr, code := runTfmirror(t, f.work, env, args...)
	if code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(f.site, "replica", "registry.opentofu.org", "v1", "modules", "acme", "mono", "aws", "1.0.0", "download"))
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := `"location": "oci://` + srv.Host + `/modules/registry.opentofu.org/acme/mono/aws//modules/vpc?digest=sha256:`
	if !strings.Contains(string(data), wantPrefix) {
		t.Fatalf("download document %s, want a location starting %s", data, wantPrefix)
	}

	origin := initModules(t, tofuBin(t), f.config, moduleHostCLI(f.reg.ModulesURL), f.env)
	base := startNginxServer(t, f.site, f.ca, exampleServerBlock(t))
	creds := fmt.Sprintf("oci_default_credentials {\n  docker_style_config_files = [%q]\n}\n", srv.DockerConfig)
	before := f.originRequests()
	got := initModules(t, tofuBin(t), f.config, moduleHostCLI(base+"replica/registry.opentofu.org/v1/modules/")+creds, f.env)
	if diff := diffTrees(origin, got); diff != "" {
		t.Errorf("the module tree installed from the registry differs from the origin's:\n%s", diff)
	}
	if n := f.originRequests() - before; n != 0 {
		t.Errorf("installing made %d requests to the origin", n)
	}

	uploads := srv.BlobUploads(t)
	if stdout, stderr, code := runTfmirror(t, f.work, env, args...); code != 0 {
		t.Fatalf("second build: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := srv.BlobUploads(t) - uploads; n != 0 {
		t.Errorf("the second build uploaded %d blobs", n)
	}
}
