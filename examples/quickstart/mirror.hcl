# The quickstart: mirror a tiny signed provider with no network at all.
#
#   go run ./cmd/tfmirror build --config examples/quickstart/mirror.hcl
#
# The upstream next to this file (made by ./generate) stands in for a
# registry: like any mirror tfmirror builds, it kept what the origin
# signed (SHA256SUMS, its signature and the key), so this build checks the
# signature end to end before it publishes into ./site.

platforms = ["linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"]
out       = ["site"]

provider "registry.tfmirror.test/examples/hello" {
  versions = ">= 0.1.0"
}

# Where providers come from, shaped like the CLI configuration's block of
# the same name: the first method that includes a provider serves it.
provider_installation {
  network_mirror {
    url     = "upstream"
    include = ["registry.tfmirror.test/*/*"]
  }
}
