resource "foo_network" "this" {}

# count makes several instances, but it is still one module to read.
module "subnets" {
  source = "./subnets"
  count  = 2
}
