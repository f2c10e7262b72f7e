platforms = ["linux_amd64"]

provider "localhost:8443/acme/foo" {
  versions = "1.0.0"
}
