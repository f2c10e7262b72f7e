package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
)

// A tag re-pointed by hand at another provider's release (same signing
// key, so its signature verifies) is never taken for the provider's own:
// build, lock and verify refuse it (exit 3), naming the package.
func TestOCITagOfAnotherProvider(t *testing.T) {
	f := newOCIFixture(t)
	env := []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir}
	out := "oci://" + f.template()
	if code, _, stderr := f.run(t, f.dir, env, "build", "--config", "mirror.hcl", "--out", out); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, stderr)
	}
	foo := f.handRepository(t, f.srv.Host+"/mirror/registry.opentofu.org/hashicorp/foo")
	bar := f.handRepository(t, f.srv.Host+"/mirror/registry.opentofu.org/hashicorp/bar")
	// Through memory: oras-go's copy from one remote repository straight
	// into another races in its own stream handling (seen under -race).
	held := memory.New()
	if _, err := oras.ExtendedCopy(t.Context(), bar, "1.0.0", held, "1.0.0", oras.DefaultExtendedCopyOptions); err != nil {
		t.Fatal(err)
	}
	if _, err := oras.ExtendedCopy(t.Context(), held, "1.0.0", foo, "1.0.0", oras.DefaultExtendedCopyOptions); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := f.run(t, f.dir, env, "build", "--config", "mirror.hcl", "--out", out)
	if code != ExitVerification || strings.Contains(stdout, "present   registry.opentofu.org/hashicorp/foo") {
		t.Errorf("build over a tag of another provider: exit %d, want %d, and foo not reported present\n%s%s", code, ExitVerification, stdout, stderr)
	}

	module := fooRootModule(t)
	code, _, stderr = f.run(t, f.dir, env, "lock", "--config", "mirror.hcl", "--mirror", out, module)
	if code != ExitVerification || !strings.Contains(stderr, "another package") {
		t.Errorf("lock from a tag of another provider: exit %d, want %d naming another package\n%s", code, ExitVerification, stderr)
	}
	if _, err := os.Stat(filepath.Join(module, ".terraform.lock.hcl")); !os.IsNotExist(err) {
		t.Errorf("lock wrote a lock file: %v", err)
	}

	code, stdout, stderr = f.run(t, f.dir, env, "verify", "--config", "mirror.hcl", out)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "terraform-provider-bar_1.0.0_linux_amd64.zip") || !strings.Contains(stdout+stderr, "belongs to another package") {
		t.Errorf("verify: exit %d, want %d naming bar's archive\n%s%s", code, ExitVerification, stdout, stderr)
	}
}

// verify of a template that names no repository holding a release is a
// wrong location (exit 2), as an empty directory or bucket prefix is, not
// a mirror with problems (exit 3).
func TestOCIVerifyOfNoRepositories(t *testing.T) {
	f := newOCIFixture(t)
	env := []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir}
	code, stdout, stderr := f.run(t, f.dir, env, "verify", "--config", "mirror.hcl", "oci://"+f.srv.Host+"/nothere/${hostname}/${namespace}/${type}")
	if code != ExitUsage || !strings.Contains(stderr, "holds no mirror") {
		t.Errorf("exit %d, want %d saying it holds no mirror\n%s%s", code, ExitUsage, stdout, stderr)
	}
}
