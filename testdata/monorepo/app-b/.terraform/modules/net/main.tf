resource "foo_vpc" "this" {}

resource "qux_peering" "this" {}

module "dns" {
  source = "./dns"
}
