terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = ">= 1.0.0, < 2.0.0"
    }
    qux = {
      source  = "registry.test/acme/qux"
      version = "~> 1.0"
    }
  }
}
