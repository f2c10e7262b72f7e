terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = ">= 1.1.0"
    }
  }
}
