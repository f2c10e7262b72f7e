package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/pagetest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestPruneRefreshesTheReplica: a prune brings the registry replica and
// the catalog page in step with the tree it leaves, under its own lock,
// so a real tofu init through the replica's host block after the prune
// installs what the mirror still holds and cannot select what was pruned
// (its files are gone: the replica must not offer them).
func TestPruneRefreshesTheReplica(t *testing.T) {
	requireMirroredHostPlatform(t)
	tofu := tofuBin(t)
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	plats := []string{"linux_amd64", "darwin_arm64"}
	reg.Add("hashicorp", "foo", "1.0.0", plats...)
	reg.Add("hashicorp", "foo", "2.0.0", plats...)
	env := caFileEnv(t, ca)
	work := t.TempDir()
	manifest := func(versions string) {
		writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/foo" {
  versions = %q
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, versions, reg.ServicesURL))
	}
	manifest(">= 1.0.0")
	if stdout, stderr, code := runTfmirror(t, work, env, "build", "--registry-replica"); code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	site := filepath.Join(work, "site")
	versionsDoc := filepath.Join(site, "replica", "registry.opentofu.org", "v1", "providers", "hashicorp", "foo", "versions")
	if doc := readString(t, versionsDoc); !strings.Contains(doc, `"1.0.0"`) || !strings.Contains(doc, `"2.0.0"`) {
		t.Fatalf("the replica after the build offers:\n%s", doc)
	}

	manifest("2.0.0")
	stdout, stderr, code := runTfmirror(t, work, env, "prune", "--grace", "0")
	if code != 0 {
		t.Fatalf("prune: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "tfmirror replica") {
		t.Errorf("the prune still asks for the replica to be written again:\n%s", stdout)
	}
	if doc := readString(t, versionsDoc); strings.Contains(doc, `"1.0.0"`) || !strings.Contains(doc, `"2.0.0"`) {
		t.Errorf("the replica after the prune offers:\n%s", doc)
	}
	// (its "Recent changes" say what was added and pruned)
	if page := pagetest.WithoutChanges(readString(t, filepath.Join(site, "index.html"))); strings.Contains(page, "1.0.0") || !strings.Contains(page, "2.0.0") {
		t.Errorf("the catalog page after the prune does not list exactly 2.0.0")
	}
	if _, err := os.Stat(filepath.Join(site, "replica", "registry.opentofu.org", "v1", "providers", "hashicorp", "foo", "1.0.0")); err == nil {
		t.Errorf("the pruned version's download documents are still in the replica")
	}
	if stdout, stderr, code := runTfmirror(t, work, env, "verify", site); code != 0 {
		t.Errorf("verify after the prune: exit %d\n%s%s", code, stdout, stderr)
	}

	base := startNginx(t, site, ca)
	cli := hostCLI(base + "replica/registry.opentofu.org/v1/providers/")
	f := &replicaFixture{env: env}
	mainTF := func(constraint string) string {
		return fmt.Sprintf("terraform {\n  required_providers {\n    foo = {\n      source  = \"hashicorp/foo\"\n      version = %q\n    }\n  }\n}\n", constraint)
	}
	out, installed, _, err := initDirect(t, f, tofu, cli, mainTF(">= 1.0.0"))
	if err != nil || len(installed) != 1 || !strings.Contains(installed[0], "v2.0.0") {
		t.Errorf("tofu init through the replica: %v, installed %q\n%s", err, installed, out)
	}
	out, _, _, err = initDirect(t, f, tofu, cli, mainTF("1.0.0"))
	if err == nil || !strings.Contains(out, "no available releases match") {
		t.Errorf("tofu init of the pruned version through the replica: %v; want no release found\n%s", err, out)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
