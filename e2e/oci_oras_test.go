package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// A registry filled for OpenTofu's oci_mirror without tfmirror, the way
// OpenTofu's documentation shows ("Provider Mirrors in OCI Registries",
// website/docs/cli/oci_registries/provider-mirror.mdx of 1.12): the oras
// CLI pushes each platform's zip into an image layout, makes the
// version's index from those manifests and copies it into the registry.
// It keeps nothing of the release's origin (no SHA256SUMS, signature or
// keys), so tfmirror reads it as it reads a network mirror another tool
// made: the layer digests (zh:) vouch for the archives, and nothing more.

// orasBin is the oras CLI scripts/test builds ($TFMIRROR_ORAS).
func orasBin(t testing.TB) string {
	t.Helper()
	p := os.Getenv("TFMIRROR_ORAS")
	if p == "" {
		t.Fatal("TFMIRROR_ORAS is not set; run ./scripts/test")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TFMIRROR_ORAS: %v", err)
	}
	return p
}

// orasPushAsDocumented puts release p, the origin's zips, into each of
// repositories of srv with the commands of OpenTofu's documentation:
//
//	oras push --artifact-type application/vnd.opentofu.provider-target \
//	  --artifact-platform linux/amd64 --oci-layout tmp-layout:linux_amd64 \
//	  terraform-provider-foo_1.0.0_linux_amd64.zip:archive/zip
//	(each platform)
//	oras manifest index create --artifact-type="application/vnd.opentofu.provider" \
//	  --oci-layout tmp-layout:1.0.0 linux_amd64 darwin_arm64
//	oras cp --from-oci-layout tmp-layout:1.0.0 REGISTRY/REPOSITORY:1.0.0
//
// with only the registry's CA and credentials added to the last. It
// returns the image layout (tmp-layout) the commands made.
func orasPushAsDocumented(t *testing.T, f *fixture, srv *registrytest.Server, p pkgVersion, repositories ...string) string {
	t.Helper()
	dir := t.TempDir()
	home := t.TempDir()
	oras := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), orasBin(t), args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, plat := range p.platforms {
		writeFile(t, filepath.Join(dir, p.zip(plat)), string(f.archive(t, p, plat)))
		oras("push",
			"--artifact-type", "application/vnd.opentofu.provider-target",
			"--artifact-platform", strings.Replace(plat, "_", "/", 1),
			"--oci-layout", "tmp-layout:"+plat,
			p.zip(plat)+":archive/zip")
	}
	oras(append([]string{"manifest", "index", "create",
		"--artifact-type=application/vnd.opentofu.provider",
		"--oci-layout", "tmp-layout:" + p.version}, p.platforms...)...)
	for _, repo := range repositories {
		oras("cp", "--from-oci-layout", "tmp-layout:"+p.version,
			"--to-ca-file", srv.CAFile, "--to-registry-config", srv.DockerConfig,
			srv.Host+"/"+repo+":"+p.version)
	}
	return filepath.Join(dir, "tmp-layout")
}

// ociInstallation is a provider_installation block with only an
// oci_mirror of template.
func ociInstallation(template string) string {
	return fmt.Sprintf("provider_installation {\n  oci_mirror {\n    repository_template = %q\n  }\n}\n", template)
}

// TestUpstreamOCIRegistryFilledByORAS fills a real registry with the
// origin's releases through the oras CLI as OpenTofu documents it, and
// reads it as an upstream: a build mirrors the byte-identical packages
// with a warning naming the registry as vouching with hashes only (exit 3
// with --require-signatures, naming the releases), tofu installs from the
// result, and `tfmirror lock --mirror oci://...` writes lock files of the
// packages' h1: and zh: that tofu accepts read-only. In a registry where
// tfmirror pushed one release and oras another, the first keeps the
// origin's signature and only the second is hashes only.
func TestUpstreamOCIRegistryFilledByORAS(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	pkgs := asciiUpstreamPackages
	foo, baz := pkgs[0], pkgs[1]
	f := newUpstreamOrigin(t, pkgs)
	srv := registrytest.StartWith(t, registrytest.Options{CA: f.ca})
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+srv.DockerConfigDir)
	template := srv.Host + "/oras/${hostname}/${namespace}/${type}"
	mixed := srv.Host + "/mixed/${hostname}/${namespace}/${type}"
	layouts := map[string]string{
		foo.dir(): orasPushAsDocumented(t, f, srv, foo, "oras/"+foo.dir(), "mixed/"+foo.dir()),
		baz.dir(): orasPushAsDocumented(t, f, srv, baz, "oras/"+baz.dir()),
	}
	upstreamName := "oci_mirror oci://" + template
	work := t.TempDir()

	t.Run("require signatures", func(t *testing.T) {
		out := filepath.Join(work, "strict")
		before := len(f.reg.Requests())
		stdout, stderr, code := buildFromUpstream(t, f, env, pkgs, ociInstallation(template), out, "--require-signatures")
		if code != 3 {
			t.Fatalf("build --require-signatures from a registry oras filled: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkNoOriginContact(t, f, before, "the build")
		if !strings.Contains(stdout+stderr, upstreamName+" vouches for it with hashes only") {
			t.Errorf("the build does not say that %s vouches with hashes only:\n%s%s", upstreamName, stdout, stderr)
		}
		for _, p := range pkgs {
			checkReleaseRefused(t, stdout+stderr, out, p)
		}
		if files := publishedFiles(t, out); len(files) > 0 {
			t.Errorf("the refused build published %q", files)
		}
	})

	t.Run("build and install", func(t *testing.T) {
		site := filepath.Join(work, "site")
		before := len(f.reg.Requests())
		stdout, stderr, code := buildFromUpstream(t, f, env, pkgs, ociInstallation(template), site)
		if code != 0 {
			t.Fatalf("build from a registry oras filled: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "4 mirrored") {
			t.Errorf("the build does not report 4 packages mirrored:\n%s", stdout)
		}
		checkHashesOnlyBuild(t, f, before, stdout+stderr, upstreamName, site, pkgs)
		for _, p := range pkgs {
			for _, pl := range p.platforms {
				got := mustRead(t, filepath.Join(site, filepath.FromSlash(networkDir(p)), p.zip(pl)))
				if string(got) != string(f.archive(t, p, pl)) {
					t.Errorf("%s %s %s: the mirrored archive is not the origin's", p.addr(), p.version, pl)
				}
			}
		}
		installFromSite(t, f, site, pkgs)
	})

	t.Run("lock", func(t *testing.T) {
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), upstreamMainTF(pkgs))
		before := len(f.reg.Requests())
		stdout, stderr, code := runTfmirror(t, wd, env, "lock", "--mirror", "oci://"+template, "--require-signatures", ".")
		if code != 3 {
			t.Fatalf("tfmirror lock --require-signatures from a registry oras filled: exit %d, want 3\n%s%s", code, stdout, stderr)
		}
		for _, p := range pkgs {
			if want := p.addr() + " " + p.version + ": " + upstreamName + " vouches for it with hashes only"; !strings.Contains(stderr, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(wd, ".terraform.lock.hcl")); !os.IsNotExist(err) {
			t.Errorf("a refused lock wrote .terraform.lock.hcl (%v)", err)
		}

		stdout, stderr, code = runTfmirror(t, wd, env, "lock", "--mirror", "oci://"+template, ".")
		if code != 0 {
			t.Fatalf("tfmirror lock from a registry oras filled: exit %d\n%s%s", code, stdout, stderr)
		}
		checkNoOriginContact(t, f, before, "tfmirror lock")
		checkLockHashes(t, f, wd, pkgs)
		creds := fmt.Sprintf("oci_default_credentials {\n  docker_style_config_files = [%q]\n}\n", srv.DockerConfig)
		out, err := runTofu(t, tofuBin(t), wd, ociMirrorCLI(template, creds), f.env, "init", "-input=false", "-lockfile=readonly")
		if err != nil {
			t.Fatalf("tofu init -lockfile=readonly from the registry (%s): %v\n%s", plat, err, out)
		}
	})

	// The image layouts the documented commands make, one per provider
	// where oci-layout:// looks for it, are read the same way.
	t.Run("lock from the image layouts", func(t *testing.T) {
		root := t.TempDir()
		for dir, layout := range layouts {
			dst := filepath.Join(root, filepath.FromSlash(dir))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-R", layout, dst).CombinedOutput(); err != nil {
				t.Fatalf("cp %s: %v\n%s", layout, err, out)
			}
		}
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), upstreamMainTF(pkgs))
		stdout, stderr, code := runTfmirror(t, wd, env, "lock", "--mirror", "oci-layout://"+root, ".")
		if code != 0 {
			t.Fatalf("tfmirror lock from the image layouts oras made: exit %d\n%s%s", code, stdout, stderr)
		}
		checkLockHashes(t, f, wd, pkgs)
	})

	t.Run("mixed with a release tfmirror pushed", func(t *testing.T) {
		writeFile(t, filepath.Join(f.work, "baz.hcl"), upstreamManifest([]pkgVersion{baz}, upstreamHosts(f.reg.ServicesURL, []pkgVersion{baz})))
		if stdout, stderr, code := runTfmirror(t, f.work, env, "build", "--config", "baz.hcl", "--out", "oci://"+mixed); code != 0 {
			t.Fatalf("build baz into the registry: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		site := filepath.Join(work, "mixed")
		mixedName := "oci_mirror oci://" + mixed
		before := len(f.reg.Requests())
		stdout, stderr, code := buildFromUpstream(t, f, env, pkgs, ociInstallation(mixed), site)
		if code != 0 {
			t.Fatalf("build from the mixed registry: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkHashesOnlyBuild(t, f, before, stdout+stderr, mixedName, site, []pkgVersion{foo})
		if !strings.Contains(stdout, "signed by "+f.reg.KeyID) {
			t.Errorf("the build does not report baz signed by the origin's key %s:\n%s", f.reg.KeyID, stdout)
		}
		if strings.Contains(stdout+stderr, baz.addr()+" "+baz.version+": "+mixedName) {
			t.Errorf("the build warns that only hashes vouch for %s, whose provenance the registry keeps:\n%s%s", baz.addr(), stdout, stderr)
		}
		checkOriginSignatureKept(t, f, site, []pkgVersion{baz})
	})
}

// checkLockHashes requires the lock file in wd to hold each platform's
// h1: and zh: of every package, and nothing else.
func checkLockHashes(t *testing.T, f *fixture, wd string, pkgs []pkgVersion) {
	t.Helper()
	locks := parseLockFile(t, filepath.Join(wd, ".terraform.lock.hcl"))
	for _, p := range pkgs {
		var want []string
		for _, pl := range p.platforms {
			archive := f.archive(t, p, pl)
			want = append(want, dirHashOfArchive(t, archive), "zh:"+sha256Hex(archive))
		}
		slices.Sort(want)
		if got := slices.Sorted(slices.Values(locks[p.addr()])); !slices.Equal(got, want) {
			t.Errorf("lock file: %s hashes %q, want each platform's h1: and zh: %q", p.addr(), got, want)
		}
	}
}
