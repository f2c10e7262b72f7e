# Mirror from a private registry, and send registry.opentofu.org requests to
# an internal copy of it. Tokens can also come from TF_TOKEN_<host>
# environment variables (TF_TOKEN_registry_internal_example), which win over
# credentials blocks; keep real tokens out of files in version control.

platforms = ["linux_amd64", "darwin_arm64"]

provider "registry.internal.example/platform/vault-config" {
  versions = ">= 1.0.0"
}

provider "hashicorp/null" {
  versions = "3.2.3"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = "https://registry.internal.example/v1/providers/" }
}

credentials "registry.internal.example" {
  token = "example-token-do-not-commit-real-ones"
}
