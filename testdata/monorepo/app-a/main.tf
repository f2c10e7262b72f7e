terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "~> 1.0"
    }
  }
}

module "network" {
  source = "../modules/network"
}

resource "foo_thing" "a" {}

# Implies hashicorp/baz: not declared in required_providers.
data "baz_zone" "primary" {}
