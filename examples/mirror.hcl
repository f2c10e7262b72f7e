# A company mirror: the providers every team uses, for the platforms our
# laptops and CI runners run on. Build it with:
#   tfmirror build --config examples/mirror.hcl --out site

platforms = ["linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64", "windows_arm64"]

provider "hashicorp/aws" {
  versions = ">= 5.80.0, < 6.0.0" # every release that matches
}

provider "hashicorp/random" {
  newest = 3 # only the three newest releases
}

provider "hashicorp/kubernetes" {
  versions = "~> 2.30"
  newest   = 2 # the two newest matches of the constraint
}

provider "integrations/github" {
  versions  = "~> 6.0"
  platforms = ["linux_amd64"] # only CI needs this one
}
