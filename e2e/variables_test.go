package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// variablesRootTF calls modules whose source and version come from
// variables and locals: ns from -var, net_version from terraform.tfvars
// (over its default), mono_name from TF_VAR_ (over its default), and the
// local module's directory from a -var-file. Each local module requires
// another version of acme/p, so the provider selection depends on it too.
const variablesRootTF = `variable "ns" {}

variable "net_version" {
  default = "0.0.1"
}

variable "mono_name" {
  default = "missing"
}

variable "local_dir" {
  type = string
}

locals {
  mono = "${var.ns}/${lower(var.mono_name)}/aws"
}

module "net" {
  source  = "${var.ns}/net/aws"
  version = var.net_version
}

module "mono" {
  source  = local.mono
  version = format("~> %d.0", 1)
}

module "local" {
  source = "./mods/${var.local_dir}"
}
`

// TestVariablesInModuleSourcesMatchTofu: on a configuration whose module
// sources and versions come from variables and locals (values from -var,
// a -var-file, terraform.tfvars and TF_VAR_), "tfmirror build" with the
// same --var and --var-file mirrors what "tofu init -var ... -var-file
// ..." (OpenTofu 1.12) selects: tofu, installing only from the mirror,
// succeeds, and its lock file and .terraform/modules/modules.json name
// exactly the provider and module versions tfmirror mirrored. Without the
// -var, the build fails with exit 2 naming the variable.
func TestVariablesInModuleSourcesMatchTofu(t *testing.T) {
	f := newModuleFixture(t)
	for _, v := range []string{"1.0.0", "1.5.0", "2.0.0"} {
		f.reg.Add("acme", "p", v, hostPlatform())
	}
	config := filepath.Join(f.work, "vars")
	writeFile(t, filepath.Join(config, "main.tf"), variablesRootTF)
	writeFile(t, filepath.Join(config, "terraform.tfvars"), "net_version = \"1.0.0\"\n")
	writeFile(t, filepath.Join(config, "mods", "one", "main.tf"), "terraform {\n  required_providers {\n    p = {\n      source  = \"acme/p\"\n      version = \"< 1.5.0\"\n    }\n  }\n}\n")
	writeFile(t, filepath.Join(config, "mods", "two", "main.tf"), "terraform {\n  required_providers {\n    p = {\n      source  = \"acme/p\"\n      version = \"~> 2.0\"\n    }\n  }\n}\n")
	varFile := filepath.Join(f.work, "vars.tfvars")
	writeFile(t, varFile, "local_dir = \"one\"\nns = \"wrong\"\n")
	writeFile(t, filepath.Join(f.work, "vars.hcl"), fmt.Sprintf(`platforms = [%q]

host "registry.opentofu.org" {
  services = { "modules.v1" = %q, "providers.v1" = %q }
}

settings {
  allowed_location_hosts = [%q]
}
`, hostPlatform(), f.reg.ModulesURL, f.reg.ServicesURL, strings.TrimPrefix(f.git.URL, "https://")))
	env := append([]string{"TF_VAR_mono_name=MONO"}, f.env...)

	// -var-file before -var: the -var's ns wins over the file's.
	stdout, stderr, code := runTfmirror(t, f.work, env, "build", "vars", "--config", "vars.hcl", "--out", "site",
		"--var-file", varFile, "--var", "ns=acme")
	if code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}

	wd := filepath.Join(t.TempDir(), "vars")
	copyTree(t, config, wd)
	base := startNginxServer(t, f.site, f.ca, exampleServerBlock(t))
	cli := mirrorOnlyCLI(base) + moduleHostCLI(base+"replica/registry.opentofu.org/v1/modules/")
	before := f.originRequests()
	out, err := runTofu(t, tofuBin(t), wd, cli, env, "init", "-input=false", "-backend=false", "-var-file="+varFile, "-var", "ns=acme")
	if err != nil {
		t.Fatalf("tofu init from the mirror: %v\n%s", err, out)
	}
	if n := f.originRequests() - before; n != 0 {
		t.Errorf("tofu init from the mirror made %d requests to the origin", n)
	}

	locked := lockVersions(t, filepath.Join(wd, ".terraform.lock.hcl"))
	mirrored := map[string]string{}
	for p, versions := range siteProviders(t, f.site) {
		mirrored[p] = strings.Join(versions, ",")
	}
	if diff := cmp.Diff(mirrored, locked); diff != "" {
		t.Errorf("providers: tofu locked (+) other versions than tfmirror mirrored (-):\n%s", diff)
	}
	if locked["registry.opentofu.org/acme/p"] != "1.0.0" {
		t.Errorf("tofu locked acme/p %q, want 1.0.0 (mods/one, from the -var-file)", locked["registry.opentofu.org/acme/p"])
	}
	if diff := cmp.Diff(siteModules(t, f.site), installedModules(t, wd)); diff != "" {
		t.Errorf("modules: tofu installed (+) other versions than tfmirror mirrored (-):\n%s", diff)
	}

	// Without ns, the build cannot know the sources: exit 2, naming it.
	stdout, stderr, code = runTfmirror(t, f.work, env, "build", "vars", "--config", "vars.hcl", "--out", "site2")
	if code != 2 || !strings.Contains(stderr, `variable "ns" has no default and no value was given`) || !strings.Contains(stderr, "module.mono (vars/main.tf:") {
		t.Errorf("build without --var ns: exit %d, want 2 naming the variable and the call\n%s%s", code, stdout, stderr)
	}
}

// siteModules lists the module versions a site holds, as "ns/name/system"
// -> sorted versions joined by commas.
func siteModules(t *testing.T, site string) map[string]string {
	t.Helper()
	found := map[string][]string{}
	for rel := range treeHashes(t, site) {
		parts := strings.Split(rel, "/")
		if len(parts) == 6 && parts[0] == "modules" && strings.HasSuffix(parts[5], ".zip") {
			key := strings.Join(parts[2:5], "/")
			found[key] = append(found[key], strings.TrimSuffix(parts[5], ".zip"))
		}
	}
	out := map[string]string{}
	for k, v := range found {
		sort.Strings(v)
		out[k] = strings.Join(v, ",")
	}
	return out
}

// installedModules lists the registry module versions "tofu init"
// recorded in .terraform/modules/modules.json, keyed as siteModules.
func installedModules(t *testing.T, wd string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(wd, ".terraform", "modules", "modules.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mf struct {
		Modules []struct{ Source, Version string }
	}
	if err := json.Unmarshal(raw, &mf); err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, m := range mf.Modules {
		if m.Version == "" {
			continue // local modules and the root
		}
		src, _, _ := strings.Cut(strings.TrimPrefix(m.Source, "registry.opentofu.org/"), "//")
		found[src] = append(found[src], m.Version)
	}
	out := map[string]string{}
	for k, v := range found {
		sort.Strings(v)
		out[k] = strings.Join(v, ",")
	}
	return out
}
