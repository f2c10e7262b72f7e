# Ignored by OpenTofu: versions.tofu has the same name and takes precedence.
# (Were both read, the two required_providers blocks would be an error.)
terraform {
  required_providers {
    baz = {
      source  = "hashicorp/baz"
      version = "~> 3.0"
    }
  }
}
