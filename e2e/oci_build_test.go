package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// TestBuildIntoOCIRegistry builds into a real registry with
// `tfmirror build --out oci://TEMPLATE` (and a directory from the same
// download), has tofu 1.12 and 1.10 install from it with only an
// oci_mirror block, builds again (no blob, no manifest uploaded), and
// builds from an origin that re-released a version with other bytes:
// refused, naming the repository and tag, with the registry left as it
// was.
func TestBuildIntoOCIRegistry(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	f := newBucketFixture(t)
	srv := registrytest.StartWith(t, registrytest.Options{CA: f.ca})
	template := srv.Host + "/mirror/${hostname}/${namespace}/${type}"
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+srv.DockerConfigDir)
	build := func(t *testing.T, dir string, wantCode int, extra ...string) (string, string) {
		t.Helper()
		args := append([]string{"build", "--config", "mirror.hcl", "--out", "oci://" + template}, extra...)
		stdout, stderr, code := runTfmirror(t, dir, env, args...)
		if code != wantCode {
			t.Fatalf("tfmirror %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout, stderr)
		}
		return stdout, stderr
	}
	build(t, f.work, 0, "--out", filepath.Join(f.work, "site"))
	uploads, manifests := srv.BlobUploads(t), len(srv.ManifestPuts(t))
	if uploads == 0 || manifests == 0 {
		t.Fatalf("the build uploaded %d blobs and %d manifests", uploads, manifests)
	}

	want := map[string]pkgVersion{
		"registry.opentofu.org/hashicorp/foo": bucketPackages[0],
		"registry.test/acme/baz":              bucketPackages[1],
	}
	creds := fmt.Sprintf("oci_default_credentials {\n  docker_style_config_files = [%q]\n}\n", srv.DockerConfig)
	for name, bin := range map[string]func(testing.TB) string{"tofu 1.12": tofuBin, "tofu 1.10": oldTofuBin} {
		t.Run(name, func(t *testing.T) {
			wd := t.TempDir()
			writeFile(t, filepath.Join(wd, "main.tf"), ociMainTF)
			initThroughMirror(t, f, bin(t), wd, ociMirrorCLI(template, creds), plat, want)
			checkOCILock(t, f, wd, plat, want)
		})
	}

	t.Run("lock from the registry", func(t *testing.T) {
		// tfmirror lock reads the registry alone: every platform's h1:
		// (from the archives, checked against the signed SHA256SUMS kept
		// next to the index) and a zh: per SHA256SUMS line; tofu accepts
		// the file with -lockfile=readonly.
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), ociMainTF)
		before := len(f.reg.Requests())
		stdout, stderr, code := runTfmirror(t, wd, env, "lock", "--mirror", "oci://"+template, ".")
		if code != 0 {
			t.Fatalf("tfmirror lock: exit %d\n%s%s", code, stdout, stderr)
		}
		if n := len(f.reg.Requests()) - before; n != 0 {
			t.Errorf("tfmirror lock made %d requests to the origin", n)
		}
		for addr, entry := range parseLock(t, filepath.Join(wd, ".terraform.lock.hcl")) {
			h1 := 0
			for _, h := range entry.Hashes {
				if strings.HasPrefix(h, "h1:") {
					h1++
				}
			}
			if h1 != 2 {
				t.Errorf("%s: %d h1: hashes in the lock file, want one per mirrored platform (2): %q", addr, h1, entry.Hashes)
			}
		}
		out, err := runTofu(t, tofuBin(t), wd, ociMirrorCLI(template, creds), f.env, "init", "-input=false", "-lockfile=readonly")
		if err != nil {
			t.Fatalf("tofu init -lockfile=readonly: %v\n%s", err, out)
		}
	})

	t.Run("verify", func(t *testing.T) {
		res := verifySite(t, f.work, env, "oci://"+template)
		if res.Providers != 2 || res.Versions != 2 || res.Archives != 4 {
			t.Errorf("verify counted %d providers, %d versions, %d archives; want 2, 2, 4", res.Providers, res.Versions, res.Archives)
		}
	})

	// Copies without the origin: the directory into an OCI layout, the
	// layout into the registry under another prefix; tofu installs from
	// there, and the origin saw no request.
	t.Run("copy without the origin", func(t *testing.T) {
		layoutDir := t.TempDir()
		copied := srv.Host + "/copied/${hostname}/${namespace}/${type}"
		before := len(f.reg.Requests())
		for _, args := range [][]string{
			{"build", "--config", "mirror.hcl", "--from", filepath.Join(f.work, "site"), "--out", "oci-layout://" + layoutDir},
			{"build", "--config", "mirror.hcl", "--from", "oci-layout://" + layoutDir, "--out", "oci://" + copied},
		} {
			stdout, stderr, code := runTfmirror(t, f.work, env, args...)
			if code != 0 || !strings.Contains(stdout, "4 mirrored") {
				t.Fatalf("tfmirror %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
		}
		if n := len(f.reg.Requests()) - before; n != 0 {
			t.Errorf("copying made %d requests to the origin: %q", n, f.reg.Requests()[before:])
		}
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), ociMainTF)
		initThroughMirror(t, f, tofuBin(t), wd, ociMirrorCLI(copied, creds), plat, want)
		checkOCILock(t, f, wd, plat, want)
		verifySite(t, f.work, env, "oci://"+copied)
	})

	// Two shards at once into a registry: split by version, so they never
	// push one tag, and together they hold every platform.
	t.Run("shards", func(t *testing.T) {
		sharded := srv.Host + "/sharded/${hostname}/${namespace}/${type}"
		var procs []*tfmirrorProc
		for k := 1; k <= 2; k++ {
			procs = append(procs, startTfmirror(t, f.work, env, "build", "--config", "mirror.hcl", "--out", "oci://"+sharded, "--shard", fmt.Sprintf("%d/2", k)))
		}
		owner := map[string]int{} // "provider version" -> the shard that mirrored it
		for k, p := range procs {
			if code, _ := p.wait(t); code != 0 {
				t.Fatalf("tfmirror %s: exit %d", strings.Join(p.args, " "), code)
			}
			for _, line := range strings.Split(p.stdout.String(), "\n") {
				fields := strings.Fields(line)
				if len(fields) < 4 || fields[0] != "mirrored" {
					continue
				}
				key := fields[1] + " " + fields[2]
				if o, ok := owner[key]; ok && o != k {
					t.Errorf("%s: platforms mirrored by two shards; into a registry a version must stay in one", key)
				}
				owner[key] = k
			}
		}
		if len(owner) != 2 {
			t.Errorf("the shards mirrored %d versions; want 2", len(owner))
		}
		res := verifySite(t, f.work, env, "oci://"+sharded)
		if res.Versions != 2 || res.Archives != 4 {
			t.Errorf("the shards left %d versions and %d archives; want 2 and 4", res.Versions, res.Archives)
		}
	})

	t.Run("no-op", func(t *testing.T) {
		uploads, manifests := srv.BlobUploads(t), len(srv.ManifestPuts(t))
		before, regBefore := len(f.reg.Requests()), len(srv.Requests(t))
		stdout, _ := build(t, f.work, 0)
		// Each version's tag is read once: what its index lists and the
		// provenance referring to it are read from that one answer.
		regRequests := srv.Requests(t)[regBefore:]
		resolved := map[string]int{}
		for _, r := range regRequests {
			if _, ref, ok := strings.Cut(r.URI, "/manifests/"); ok && !strings.HasPrefix(ref, "sha256") {
				resolved[ref]++
			}
		}
		for tag, n := range resolved {
			if n != 1 {
				t.Errorf("the second build read the tag %s %d times; want once", tag, n)
			}
		}
		t.Logf("the second build made %d requests to the registry", len(regRequests))
		if got := srv.BlobUploads(t); got != uploads {
			t.Errorf("the second build uploaded %d blobs; want none", got-uploads)
		}
		if got := len(srv.ManifestPuts(t)); got != manifests {
			t.Errorf("the second build pushed %d manifests; want none", got-manifests)
		}
		for _, r := range f.reg.Requests()[before:] {
			if strings.HasSuffix(r, ".zip") {
				t.Errorf("the second build downloaded %s", r)
			}
		}
		if !strings.Contains(stdout, "4 already present") {
			t.Errorf("the second build does not report its 4 packages as already present:\n%s", stdout)
		}
	})

	t.Run("tag holds another package", func(t *testing.T) {
		// Someone pushed foo 1.0.0 by hand, from an origin that serves
		// other bytes, without tfmirror's provenance: the build fetches
		// from its origin, and must refuse to re-point the tag.
		g := &fixture{ca: f.ca, pkgs: []pkgVersion{bucketPackages[0]}}
		g.pkgs[0].dirEntries = true
		g.reg = fakeregistry.New(t, f.ca)
		g.reg.AddWithOptions("hashicorp", "foo", "1.0.0", fakeregistry.Options{DirEntries: true}, g.pkgs[0].platforms...)
		other := srv.Host + "/handmade/${hostname}/${namespace}/${type}"
		store, err := ocistore.New(t.Context(), "oci://"+other, ocistore.Config{Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		rel := originRelease(t, g, g.pkgs[0])
		rel.Record = nil
		if _, err := store.Push(t.Context(), rel, ocistore.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		before, found, err := store.Release(t.Context(), rel.Provider, rel.Version)
		if err != nil || !found {
			t.Fatalf("the hand-pushed tag: %v, found %v", err, found)
		}
		args := []string{"build", "--config", "mirror.hcl", "--out", "oci://" + other}
		stdout, stderr, code := runTfmirror(t, f.work, env, args...)
		if code == 0 {
			t.Fatalf("the build re-pointed a tag holding another package:\n%s%s", stdout, stderr)
		}
		for _, s := range []string{srv.Host + "/handmade/registry.opentofu.org/hashicorp/foo", "1.0.0", before.Archives[0].Digest} {
			if !strings.Contains(stderr, s) {
				t.Errorf("the refusal does not name %q:\n%s", s, stderr)
			}
		}
		after, _, err := store.Release(t.Context(), rel.Provider, rel.Version)
		if err != nil || after.Index != before.Index {
			t.Errorf("the tag now names %s (%v); it named %s", after.Index, err, before.Index)
		}

		// Asked for explicitly, the build re-points the tag.
		stdout, stderr, code = runTfmirror(t, f.work, env, append(args, "--overwrite-oci-tags")...)
		if code != 0 {
			t.Fatalf("build --overwrite-oci-tags: exit %d\n%s%s", code, stdout, stderr)
		}
		if now, _, err := store.Release(t.Context(), rel.Provider, rel.Version); err != nil || now.Index == before.Index {
			t.Errorf("--overwrite-oci-tags left the tag at %s (%v)", now.Index, err)
		}
		verifySite(t, f.work, env, "oci://"+other)
	})

	t.Run("re-pointed tag is found", func(t *testing.T) {
		// Someone re-points foo 1.0.0 at a well-formed index of another
		// package: tofu would install it; verify must say so.
		g := &fixture{ca: f.ca, pkgs: []pkgVersion{bucketPackages[0]}}
		g.pkgs[0].dirEntries = true
		g.reg = fakeregistry.New(t, f.ca)
		g.reg.AddWithOptions("hashicorp", "foo", "1.0.0", fakeregistry.Options{DirEntries: true}, g.pkgs[0].platforms...)
		store, err := ocistore.New(t.Context(), "oci://"+template, ocistore.Config{Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		rel := originRelease(t, g, g.pkgs[0])
		rel.Record = nil
		if _, err := store.Push(t.Context(), rel, ocistore.PushOptions{Overwrite: true}); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runTfmirror(t, f.work, env, "verify", "oci://"+template)
		if code != 3 {
			t.Fatalf("verify of a re-pointed tag: exit %d, want 3\n%s%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, srv.Host+"/mirror/registry.opentofu.org/hashicorp/foo:1.0.0") {
			t.Errorf("verify does not name the re-pointed tag:\n%s", stdout)
		}
	})
}
