platforms = ["linux_amd64"]

provider "hashicorp/foo" {
  versions = ">= 1.0.0"
