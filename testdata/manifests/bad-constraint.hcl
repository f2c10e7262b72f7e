platforms = ["linux_amd64"]

provider "hashicorp/foo" {
  versions = "v1.0.0"
}
