package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/compat"
)

// matrixClient is one client binary the matrix runs, in the column of
// internal/compat its reported release falls in.
type matrixClient struct {
	bin     string
	program compat.Program
	release string
	column  compat.Column
}

// matrixClientSpec names a client and how to find its binary (which skips
// when it is missing outside CI and fails in CI).
type matrixClientSpec struct {
	name    string
	program compat.Program
	bin     func(testing.TB) string
}

func matrixClientSpecs() []matrixClientSpec {
	specs := []matrixClientSpec{
		{"tofu", compat.OpenTofu, tofuBin},
		{"tofu-old", compat.OpenTofu, oldTofuBin},
		{"terraform", compat.Terraform, terraformBin},
		{"terraform-old", compat.Terraform, terraformOldBin},
	}
	if p := extraTerraform(); p != "" {
		specs = append(specs, matrixClientSpec{"terraform-extra", compat.Terraform, func(testing.TB) string { return p }})
	}
	return specs
}

// extraTerraform is a further Terraform the machine has
// (TFMIRROR_TERRAFORM_EXTRA, else /usr/local/bin/terraform), or "".
func extraTerraform() string {
	if p := os.Getenv("TFMIRROR_TERRAFORM_EXTRA"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/local/bin/terraform"); err == nil {
		return "/usr/local/bin/terraform"
	}
	return ""
}

// identifyClient asks the binary its release (`version -json`) and finds
// its column.
func identifyClient(t *testing.T, bin string, program compat.Program) matrixClient {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "version", "-json")
	cmd.Env = mergeEnv(baseEnv(), []string{"HOME=" + t.TempDir(), "CHECKPOINT_DISABLE=1"})
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s version -json: %v", bin, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version -json: %v\n%s", bin, err, out)
	}
	column, err := compat.ColumnOf(program, v.Version)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return matrixClient{bin: bin, program: program, release: v.Version, column: column}
}

// TestCompatibilityMatrix proves internal/compat, the table
// docs/compatibility.md is generated from: every client through every
// method, from one shared build. Each cell runs a real init from a clean
// directory and checks what internal/compat says: the client's own error
// when the method does not work for it; otherwise the installed module
// tree, or for providers how init says it checked each package and which
// hashes the lock file it wrote holds, and then that the lock file
// `tfmirror lock` wrote from the same output passes init -lockfile=readonly
// from a clean directory and stays byte for byte.
func TestCompatibilityMatrix(t *testing.T) {
	start := time.Now()
	f := newMatrixFixture(t)
	t.Logf("fixture built in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { t.Logf("matrix took %s", time.Since(start).Round(time.Millisecond)) })
	for _, spec := range matrixClientSpecs() {
		t.Run(spec.name, func(t *testing.T) {
			t.Parallel()
			client := identifyClient(t, spec.bin(t), spec.program)
			t.Logf("%s %s: column %s", client.program, client.release, client.column.ID)
			for _, m := range compat.Methods {
				cell, err := compat.CellOf(m.ID, client.column.ID)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(m.ID, func(t *testing.T) {
					t.Parallel()
					f.runCell(t, client, m, cell)
				})
			}
		})
	}
}

func (f *matrixFixture) runCell(t *testing.T, client matrixClient, m compat.Method, cell compat.Cell) {
	if m.LockOnly {
		f.runLockOnlyCell(t, client, m, cell)
		return
	}
	cli, mainTF := f.methodConfig(m.ID)
	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), mainTF)
	out, err := runTofu(t, client.bin, wd, cli, f.env, "init", "-input=false")
	if !cell.Works {
		if err == nil {
			t.Fatalf("init passed; internal/compat says it fails with %q", cell.Error)
		}
		if !strings.Contains(collapseSpace(out), cell.Error) {
			t.Fatalf("init failed without the error internal/compat names (%q):\n%s", cell.Error, out)
		}
		return
	}
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if m.Modules {
		f.checkModules(t, m, wd)
		return
	}
	f.checkInstalled(t, client, cell, out)
	clientLock := filepath.Join(wd, ".terraform.lock.hcl")
	f.checkLock(t, "the lock file init wrote", clientLock, cell.Default, cell.Other, client.program)
	if warned, want := strings.Contains(out, incompleteLockWarning), !cell.Default.Complete() || !cell.Other.Complete(); warned != want {
		t.Errorf("init printed %q: %v, internal/compat says %v", incompleteLockWarning, warned, want)
	}
	toolDir := f.initWithToolLock(t, client, m, cli, mainTF)
	f.checkLockVerdicts(t, client, m, cli, wd, toolDir)
}

// hashicorpOnTerraformTF requires a hashicorp provider of Terraform's
// registry host.
const hashicorpOnTerraformTF = `terraform {
  required_providers {
    foo = {
      source  = "registry.terraform.io/hashicorp/foo"
      version = "1.1.0"
    }
  }
}
`

// runLockOnlyCell writes the lock file of hashicorpOnTerraformTF with
// `tfmirror lock` (every platform's h1: and zh:) and runs init
// -lockfile=readonly through network_mirror on it: it passes and keeps the
// file, or fails with the client's error.
func (f *matrixFixture) runLockOnlyCell(t *testing.T, client matrixClient, m compat.Method, cell compat.Cell) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.tf"), hashicorpOnTerraformTF)
	stdout, stderr, code := runTfmirror(t, dir, f.env, "lock", "--mirror", f.lockSource(m.ID), ".")
	if code != 0 {
		t.Fatalf("tfmirror lock: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	p := pkgVersion{host: "registry.terraform.io", ns: "hashicorp", typ: "foo", version: "1.1.0"}
	if got, want := slices.Sorted(slices.Values(parseLockFile(t, lockPath)[p.addr()])), f.hashes(t, p, compat.AllH1AllZH); !slices.Equal(got, want) {
		t.Fatalf("tfmirror lock: %s hashes\n got %q\nwant %q", p.addr(), got, want)
	}
	want := mustRead(t, lockPath)
	cli := f.networkMirrorCLI("")
	out, err := runTofu(t, client.bin, dir, cli, f.env, "init", "-input=false", "-lockfile=readonly")
	if !cell.Works {
		if err == nil || !strings.Contains(collapseSpace(out), cell.Error) {
			t.Fatalf("init -lockfile=readonly: %v; internal/compat says it fails with %q\n%s", err, cell.Error, out)
		}
		// The client's own lock file fails the same way.
		own := t.TempDir()
		writeFile(t, filepath.Join(own, "main.tf"), hashicorpOnTerraformTF)
		if out, err := runTofu(t, client.bin, own, cli, f.env, "init", "-input=false"); err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		out, err = runTofu(t, client.bin, own, cli, f.env, "init", "-input=false", "-lockfile=readonly")
		if err == nil || !strings.Contains(collapseSpace(out), cell.Error) {
			t.Fatalf("init -lockfile=readonly with the client's own lock file: %v; internal/compat says it fails with %q\n%s", err, cell.Error, out)
		}
		return
	}
	if err != nil {
		t.Fatalf("init -lockfile=readonly with tfmirror lock's file: %v\n%s", err, out)
	}
	if line := installedLine(p, client.program, cell); !strings.Contains(out, line) {
		t.Errorf("init did not print %q:\n%s", line, out)
	}
	if got := mustRead(t, lockPath); !bytes.Equal(got, want) {
		t.Errorf("init -lockfile=readonly changed tfmirror lock's file:\n%s", lineDiff(string(want), string(got)))
	}
}

const incompleteLockWarning = "Incomplete lock file information for providers"

// initWithToolLock runs init -lockfile=readonly from a clean directory
// holding the lock file `tfmirror lock` wrote for the method's output: it
// must pass, warn of no incomplete lock file, and leave the file byte for
// byte. It returns the directory.
func (f *matrixFixture) initWithToolLock(t *testing.T, client matrixClient, m compat.Method, cli, mainTF string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.tf"), mainTF)
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	want := f.toolLocks[m.ID]
	writeFile(t, lockPath, string(want))
	out, err := runTofu(t, client.bin, dir, cli, f.env, "init", "-input=false", "-lockfile=readonly")
	if err != nil {
		t.Fatalf("init -lockfile=readonly with tfmirror lock's file (from %s): %v\n%s", m.LockFrom, err, out)
	}
	if strings.Contains(out, incompleteLockWarning) {
		t.Errorf("init with tfmirror lock's file printed %q:\n%s", incompleteLockWarning, out)
	}
	if got := mustRead(t, lockPath); !bytes.Equal(got, want) {
		t.Errorf("init -lockfile=readonly changed tfmirror lock's file:\n%s", lineDiff(string(want), string(got)))
	}
	return dir
}

// checkLockVerdicts holds `tfmirror lock --check` to the client in every
// provider cell: clientDir holds the lock file the client's init wrote,
// toolDir the one `tfmirror lock` wrote (which init kept byte for byte),
// each beside the same main.tf. The tool's file passes the check for
// every platform the mirror holds; on the platform the client runs on,
// the check's verdict on the client's own file is what a second init from
// a clean directory does with it: kept byte for byte when it passes,
// rewritten when it is flagged.
func (f *matrixFixture) checkLockVerdicts(t *testing.T, client matrixClient, m compat.Method, cli, clientDir, toolDir string) {
	t.Helper()
	source := f.lockSource(m.ID)
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+f.oci.DockerConfigDir)
	if stdout, stderr, code := runTfmirror(t, toolDir, env, "lock", "--check", "--mirror", source, "."); code != 0 {
		t.Errorf("lock --check flags the file tfmirror lock wrote (exit %d):\n%s%s", code, stdout, stderr)
	}
	here := runtime.GOOS + "_" + runtime.GOARCH
	stdout, stderr, code := runTfmirror(t, clientDir, env, "lock", "--check", "--platform", here,
		"--client", checkClient(client.program), "--via", checkVia(m.ID), "--mirror", source, ".")
	if code != 0 && code != 1 {
		t.Fatalf("lock --check of the client's file: exit %d\n%s%s", code, stdout, stderr)
	}
	again := t.TempDir()
	want := mustRead(t, filepath.Join(clientDir, ".terraform.lock.hcl"))
	writeFile(t, filepath.Join(again, "main.tf"), string(mustRead(t, filepath.Join(clientDir, "main.tf"))))
	writeFile(t, filepath.Join(again, ".terraform.lock.hcl"), string(want))
	out, err := runTofu(t, client.bin, again, cli, f.env, "init", "-input=false")
	kept := err == nil && bytes.Equal(mustRead(t, filepath.Join(again, ".terraform.lock.hcl")), want)
	if kept != (code == 0) {
		t.Errorf("lock --check exits %d on %s's own lock file, but a second init kept it: %v (init error: %v)\ncheck:\n%s%s\ninit:\n%s",
			code, client.program, kept, err, stdout, stderr, out)
	}
}

// checkClient is the client's name for lock --check --client.
func checkClient(p compat.Program) string {
	if p == compat.Terraform {
		return "terraform"
	}
	return "tofu"
}

// checkVia is how a method installs, for lock --check --via.
func checkVia(method string) string {
	switch method {
	case "filesystem_packed", "filesystem_unpacked":
		return "filesystem_mirror"
	case "oci_mirror":
		return "oci_mirror"
	}
	return "network_mirror"
}

// methodConfig is the CLI configuration and the main.tf a method installs
// with.
func (f *matrixFixture) methodConfig(method string) (cli, mainTF string) {
	fsMirror := "provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n"
	switch method {
	case "network_mirror":
		return f.networkMirrorCLI(""), matrixProvidersTF
	case "trust_all_hashes":
		return f.networkMirrorCLI("    trust_all_hashes = true\n"), matrixProvidersTF
	case "filesystem_packed":
		return fmt.Sprintf(fsMirror, f.packed), matrixProvidersTF
	case "filesystem_unpacked":
		return fmt.Sprintf(fsMirror, f.unpacked), matrixProvidersTF
	case "registry_replica":
		return f.hostBlocks(f.base, "providers.v1", func(host string) string { return host }), matrixProvidersTF
	case "oci_mirror":
		return ociMirrorCLI(f.ociTemplate, f.ociCredentials()), matrixProvidersTF
	case "modules_nginx":
		return f.moduleHosts(f.base), moduleRootTF
	case "modules_static":
		return f.moduleHosts(f.plainBase), moduleRootTF
	case "oci_modules":
		return f.ociCredentials(), f.ociModulesTF()
	}
	panic("no configuration for method " + method)
}

func (f *matrixFixture) networkMirrorCLI(extra string) string {
	return fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n%s  }\n}\n", f.base, extra)
}

// hostBlocks points service at base's replica of tree(host) for both
// registry hosts.
func (f *matrixFixture) hostBlocks(base, service string, tree func(host string) string) string {
	var b strings.Builder
	for _, host := range []string{"registry.opentofu.org", "registry.terraform.io"} {
		path := "/v1/providers/"
		if service == "modules.v1" {
			path = "/v1/modules/"
		}
		fmt.Fprintf(&b, "host %q {\n  services = { %q = %q }\n}\n", host, service, base+"replica/"+tree(host)+path)
	}
	return b.String()
}

// moduleHosts serves the mirrored modules (built, as tfmirror reads
// configurations, under OpenTofu's default host) for both clients' default
// hosts: Terraform reads "acme/net/aws" as registry.terraform.io's.
func (f *matrixFixture) moduleHosts(base string) string {
	return f.hostBlocks(base, "modules.v1", func(string) string { return "registry.opentofu.org" })
}

// ociModulesTF calls two mirrored modules by oci:// source: one with a
// subdirectory, one plain.
func (f *matrixFixture) ociModulesTF() string {
	return fmt.Sprintf(`module "vpc" {
  source = "oci://%[1]s/mirror/registry.opentofu.org/acme/mono/aws//modules/vpc?tag=1.0.0"
}

module "hdr" {
  source = "oci://%[1]s/mirror/registry.opentofu.org/acme/hdr/aws?tag=1.0.0"
}
`, f.oci.Host)
}

// checkModules compares the module tree init installed with the one tofu
// init installs from the origin (modules.json aside: each client writes
// its own).
func (f *matrixFixture) checkModules(t *testing.T, m compat.Method, wd string) {
	t.Helper()
	want := map[string]string{}
	for p, h := range f.originModules {
		switch {
		case p == "modules.json":
		case m.ID != "oci_modules":
			want[p] = h
		case strings.HasPrefix(p, "hdr/"):
			want[p] = h
		case strings.HasPrefix(p, "mono/"):
			want["vpc/"+strings.TrimPrefix(p, "mono/")] = h
		}
	}
	got := treeHashes(t, filepath.Join(wd, ".terraform", "modules"))
	for p := range got {
		if p == "modules.json" || p == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
			delete(got, p)
		}
	}
	if len(want) == 0 {
		t.Fatal("the origin's module tree is empty")
	}
	if diff := diffTrees(want, got); diff != "" {
		t.Errorf("the module tree differs from the one tofu init installs from the origin:\n%s", diff)
	}
}

// checkInstalled requires init's "- Installed ADDR vX" line for every
// provider the configuration selects, with what internal/compat says the
// client prints of how it checked the package.
func (f *matrixFixture) checkInstalled(t *testing.T, client matrixClient, cell compat.Cell, out string) {
	t.Helper()
	for _, p := range f.installed {
		if line := installedLine(p, client.program, cell); !strings.Contains(out, line) {
			t.Errorf("init did not print %q:\n%s", line, out)
		}
	}
}

// installedLine is what init prints when it has installed p: the address
// without the host when it is the program's default.
func installedLine(p pkgVersion, program compat.Program, cell compat.Cell) string {
	addr := p.addr()
	if p.host == program.DefaultHost() {
		addr = p.ns + "/" + p.typ
	}
	return "- Installed " + addr + " v" + p.version + cell.Installed
}

// checkLock requires the lock file at path to hold, for every provider the
// configuration selects, its version and exactly the hashes internal/compat
// says: def for providers of the program's default host, other for the rest.
func (f *matrixFixture) checkLock(t *testing.T, what, path string, def, other compat.Hashes, program compat.Program) {
	t.Helper()
	entries := parseLock(t, path)
	if len(entries) != len(f.installed) {
		t.Errorf("%s holds %d providers, want %d", what, len(entries), len(f.installed))
	}
	for _, p := range f.installed {
		kind := other
		if p.host == program.DefaultHost() {
			kind = def
		}
		e := entries[p.addr()]
		if e.Version != p.version {
			t.Errorf("%s: %s version %q, want %q", what, p.addr(), e.Version, p.version)
		}
		got, want := slices.Sorted(slices.Values(e.Hashes)), f.hashes(t, p, kind)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s hashes (want %s):\n got %q\nwant %q", what, p.addr(), kind.Markdown(), got, want)
		}
	}
}

// hashes is what a lock file holds for p when it holds kind, sorted.
func (f *matrixFixture) hashes(t *testing.T, p pkgVersion, kind compat.Hashes) []string {
	t.Helper()
	platforms := f.platforms
	if kind < compat.AllH1ZH {
		platforms = []string{hostPlatform()}
	}
	var out []string
	for _, plat := range platforms {
		archive := f.reg.Archive(p.ns, p.typ, p.version, plat)
		out = append(out, dirHashOfArchive(t, archive))
		if kind == compat.LocalH1ZH || kind == compat.AllH1ZH {
			out = append(out, "zh:"+sha256Hex(archive))
		}
	}
	if kind == compat.LocalH1AllZH || kind == compat.AllH1AllZH {
		for line := range strings.Lines(string(f.reg.SHA256SUMS(p.ns, p.typ, p.version))) {
			if sum, _, ok := strings.Cut(line, "  "); ok {
				out = append(out, "zh:"+sum)
			}
		}
	}
	slices.Sort(out)
	return out
}

// collapseSpace makes every run of white space one space: clients wrap
// their error messages to the terminal's width.
func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }
