# A version in a provider block is deprecated, but OpenTofu still counts it.
provider "foo" {
  version = "< 1.2.0"
}
