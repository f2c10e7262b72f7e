# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/foo" {
  version     = "1.1.0"
  constraints = "~> 1.0, >= 1.1.0"
}
