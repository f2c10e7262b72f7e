terraform {
  required_providers {
    hello = {
      source  = "registry.tfmirror.test/examples/hello"
      version = "~> 0.2"
    }
  }
}
