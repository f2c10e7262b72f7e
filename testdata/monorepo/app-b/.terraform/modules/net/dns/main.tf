terraform {
  required_providers {
    bar = {
      source  = "hashicorp/bar"
      version = "< 0.2.0"
    }
  }
}

resource "bar_record" "this" {}
