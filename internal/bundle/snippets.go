package bundle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Placeholders in the CLI configuration snippets, for the operator to
// replace with where the imported mirror is served or stored.
const (
	URLPlaceholder  = "https://MIRROR.EXAMPLE/"
	PathPlaceholder = "/PATH/TO/MIRROR"
)

// cliConfigSnippets returns the files of cli-config/, by name.
func cliConfigSnippets(providers []addrs.Provider) map[string][]byte {
	hosts := map[string]bool{}
	for _, p := range providers {
		hosts[p.Hostname.ForDisplay()] = true
	}
	hostList := make([]string, 0, len(hosts))
	for h := range hosts {
		hostList = append(hostList, h)
	}
	slices.Sort(hostList)
	held := "#\n# The bundle's mirror holds providers of " + strings.Join(hostList, ", ") + ".\n"

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
	return map[string][]byte{
		"tofu-network-mirror.tfrc":         fmt.Appendf(nil, network, "OpenTofu", tofuFiles, held, "", URLPlaceholder, trustAll),
		"tofu-filesystem-mirror.tfrc":      fmt.Appendf(nil, filesystem, "OpenTofu", tofuFiles, held, "", PathPlaceholder),
		"terraform-network-mirror.tfrc":    fmt.Appendf(nil, network, "Terraform", terraformFiles, held, terraformNote, URLPlaceholder, ""),
		"terraform-filesystem-mirror.tfrc": fmt.Appendf(nil, filesystem, "Terraform", terraformFiles, held, terraformNote, PathPlaceholder),
	}
}
