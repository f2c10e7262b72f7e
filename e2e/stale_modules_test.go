package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/gitserver"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestStaleInstalledModuleIsNotRead installs git modules with "tofu get"
// (OpenTofu 1.12), then reads the configuration with "tfmirror check":
// while the calls are what tofu installed (one written with a "//./sub"
// subdirectory, which tofu records cleaned), tfmirror reads the installed
// modules' providers and warns of nothing. Once a call asks for another
// ref, "tofu providers" refuses the configuration ("Module source has
// changed") and tfmirror no longer reads the stale module: it warns,
// naming the call and the source tofu installed, and leaves the old
// module's provider out (it counted it).
func TestStaleInstalledModuleIsNotRead(t *testing.T) {
	ca := testca.New(t)
	git := gitserver.Start(t, ca)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir(), "localhost", "127.0.0.1")
	env := []string{"SSL_CERT_FILE=" + caFile, "GIT_SSL_CAINFO=" + caFile}
	requires := func(p string) string {
		return "terraform {\n  required_providers {\n    " + p + " = { source = \"acme/" + p + "\" }\n  }\n}\n"
	}
	git.Commit(t, "net", map[string]string{"sub/main.tf": requires("one")}, "v1")
	git.Commit(t, "net", map[string]string{"sub/main.tf": requires("two")}, "v2")
	git.Commit(t, "dot", map[string]string{"sub/main.tf": requires("three")}, "v1")
	repo := git.RepoURL("net")

	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), "platforms = [\"linux_amd64\"]\n")
	app := filepath.Join(work, "app")
	calls := func(ref string) string {
		return "module \"net\" {\n  source = \"git::" + repo + "//sub?ref=" + ref + "\"\n}\n\n" +
			"module \"dot\" {\n  source = \"git::" + git.RepoURL("dot") + "//./sub?ref=v1\"\n}\n\n" + requires("root")
	}
	writeFile(t, filepath.Join(app, "main.tf"), calls("v1"))
	if out, err := runTofu(t, tofuBin(t), app, "", env, "get"); err != nil {
		t.Fatalf("tofu get: %v\n%s", err, out)
	}
	if out, err := runTofu(t, tofuBin(t), app, "", env, "providers"); err != nil {
		t.Fatalf("tofu providers of the configuration it installed: %v\n%s", err, out)
	}
	stdout, stderr, code := runTfmirror(t, work, env, "check", "--config", "mirror.hcl", "app")
	if code != 0 || strings.Contains(stdout+stderr, "warning") || !strings.Contains(stdout, "3 providers") {
		t.Fatalf("check of the installed configuration: exit %d, want 0, no warning, 3 providers (root, one and three)\n%s%s", code, stdout, stderr)
	}

	writeFile(t, filepath.Join(app, "main.tf"), calls("v2"))
	if out, err := runTofu(t, tofuBin(t), app, "", env, "providers"); err == nil || !strings.Contains(out, "Module source has changed") {
		t.Fatalf("tofu providers after the ref changed: err %v, want \"Module source has changed\"\n%s", err, out)
	}
	stdout, stderr, code = runTfmirror(t, work, env, "check", "--config", "mirror.hcl", "app")
	want := `module.net (git::` + repo + `//sub?ref=v2) in app/main.tf:1: its source has changed since "tofu init" installed it from "git::` + repo + `//sub?ref=v1"`
	if code != 0 || !strings.Contains(stdout, "warning: app: "+want) || !strings.Contains(stdout, "2 providers") {
		t.Errorf("check after the ref changed: exit %d, want 0, warning %q, 2 providers (root and three: not one, which the stale module requires)\n%s%s", code, want, stdout, stderr)
	}
}
