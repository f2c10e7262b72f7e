# A complete manifest, used by TestLoad.
platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/aws" {
  versions = ">= 5.0.0"
  newest   = 1
}
