# A registry module that "tofu init" has already installed under
# .terraform/modules (see .terraform/modules/modules.json).
module "net" {
  source  = "registry.test/acme/network/foo"
  version = "~> 1.0"
}

resource "baz_record" "b" {}
