package bundle

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/replica"
)

// Placeholders in the CLI configuration snippets, for the operator to
// replace with where the imported mirror is served or stored.
const (
	URLPlaceholder  = "https://MIRROR.EXAMPLE/"
	PathPlaceholder = "/PATH/TO/MIRROR"
)

// The names of the files of cli-config/: the module snippets only in a
// bundle that holds modules.
var (
	providerSnippets = []string{"tofu-network-mirror.tfrc", "tofu-filesystem-mirror.tfrc", "terraform-network-mirror.tfrc", "terraform-filesystem-mirror.tfrc"}
	moduleSnippets   = []string{"tofu-modules.tfrc", "terraform-modules.tfrc"}
)

// cliConfigSnippets returns the files of cli-config/, by name.
func cliConfigSnippets(providers []addrs.Provider, modules []addrs.Module) map[string][]byte {
	hosts := map[string]bool{}
	for _, p := range providers {
		hosts[p.Hostname.ForDisplay()] = true
	}
	held := "#\n# The bundle's mirror holds providers of " + strings.Join(slices.Sorted(maps.Keys(hosts)), ", ") + ".\n"
	if len(hosts) == 0 {
		held = "#\n# The bundle's mirror holds no provider, only modules.\n"
	}

	const network = `# %[1]s CLI configuration: install every provider from the network
# mirror made from this bundle ("tfmirror bundle import --out DIR", then
# serve DIR over HTTPS, with .json files as application/json).
#
# Put this in %[2]s
# or in the file TF_CLI_CONFIG_FILE names, and replace the URL with the
# mirror's (the trailing slash matters).
%[3]s%[4]s#
# With no "direct" block, %[1]s never contacts the origin registries.
provider_installation {
  network_mirror {
    url = "%[5]s"%[6]s
  }
}
`
	const filesystem = `# %[1]s CLI configuration: install every provider from the directory
# made from this bundle ("tfmirror bundle import --out DIR"). That network
# mirror tree is also a packed filesystem mirror for providers on ASCII
# hostnames: %[1]s reads its terraform-provider-TYPE_VERSION_OS_ARCH.zip
# archives and ignores the other files. (Directories of internationalized
# hostnames are in punycode there, which filesystem mirrors do not read.)
#
# Put this in %[2]s
# or in the file TF_CLI_CONFIG_FILE names, and replace the path with DIR.
%[3]s%[4]s#
# With no "direct" block, %[1]s never contacts the origin registries.
provider_installation {
  filesystem_mirror {
    path = "%[5]s"
  }
}
`
	const tofuFiles = "~/.tofurc (%APPDATA%/tofu.rc on Windows),"
	const terraformFiles = "~/.terraformrc (%APPDATA%/terraform.rc on Windows),"
	const terraformNote = "# Terraform reads a source such as hashicorp/aws as\n" +
		"# registry.terraform.io/hashicorp/aws: the mirror must hold that address,\n" +
		"# so build it from registry.terraform.io providers for Terraform.\n"
	const trustAll = "\n    trust_all_hashes = true  # OpenTofu >= 1.12: lock files get every platform's hashes"
	files := map[string][]byte{
		providerSnippets[0]: fmt.Appendf(nil, network, "OpenTofu", tofuFiles, held, "", URLPlaceholder, trustAll),
		providerSnippets[1]: fmt.Appendf(nil, filesystem, "OpenTofu", tofuFiles, held, "", PathPlaceholder),
		providerSnippets[2]: fmt.Appendf(nil, network, "Terraform", terraformFiles, held, terraformNote, URLPlaceholder, ""),
		providerSnippets[3]: fmt.Appendf(nil, filesystem, "Terraform", terraformFiles, held, terraformNote, PathPlaceholder),
	}
	if len(modules) > 0 {
		files[moduleSnippets[0]] = moduleSnippet("OpenTofu", tofuFiles, modules, false)
		files[moduleSnippets[1]] = moduleSnippet("Terraform", terraformFiles, modules, true)
	}
	return files
}

// moduleSnippet is the CLI configuration that makes a client install the
// bundle's modules from the module registry replica of the imported
// mirror: a host block per host the modules come from. Terraform reads a
// module address without a host as registry.terraform.io's, where
// tfmirror reads registry.opentofu.org's, so Terraform's snippet also
// points registry.terraform.io at registry.opentofu.org's replica when
// the bundle holds no registry.terraform.io module, and otherwise says
// to write the host in those sources.
func moduleSnippet(client, files string, modules []addrs.Module, terraform bool) []byte {
	hosts := map[addrs.Hostname]bool{}
	for _, m := range modules {
		hosts[m.Host] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# %[1]s CLI configuration: install every module from the module registry
# replica made from this bundle ("tfmirror bundle import --out DIR" writes
# it under DIR/replica/; serve DIR over HTTPS, as for the network mirror;
# an import with --layout packed or unpacked keeps no replica clients read).
#
# Put this in %[2]s
# or in the file TF_CLI_CONFIG_FILE names, beside a provider_installation
# block, and replace %[3]s with the mirror's URL.
#
# A host block answers for that registry host: %[1]s asks the mirror for
# its modules and never the origin.
`, client, files, URLPlaceholder)
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		b.WriteString("\n" + modulesBlock(h, h))
	}
	switch {
	case !terraform || !hosts[addrs.DefaultModuleHost]:
	case !hosts[addrs.TerraformModuleHost]:
		b.WriteString("\n# Terraform reads a module source such as acme/net/aws as\n" +
			"# registry.terraform.io/acme/net/aws; tfmirror read it as\n" +
			"# registry.opentofu.org/acme/net/aws, whose replica this block names.\n")
		b.WriteString(modulesBlock(addrs.TerraformModuleHost, addrs.DefaultModuleHost))
	default:
		b.WriteString("\n# Terraform reads a module source such as acme/net/aws as\n" +
			"# registry.terraform.io/acme/net/aws, and this bundle holds modules of\n" +
			"# registry.terraform.io too, whose replica its block names: write\n" +
			"# registry.opentofu.org/ in the sources of registry.opentofu.org's\n" +
			"# modules (tfmirror read a source without a host as those).\n")
	}
	return []byte(b.String())
}

// modulesBlock is the host block that points host's modules.v1 at the
// replica of from's modules.
func modulesBlock(host, from addrs.Hostname) string {
	return replica.ServicesBlock(host, URLPlaceholder, map[string]string{regproto.ModulesV1: "/" + replica.ModuleServicesPath(from)})
}
