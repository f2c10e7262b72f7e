# Mirror exactly what the configurations under live/ need, for the
# platforms of our laptops and CI runners. Run from this directory:
#
#   tfmirror build --out ../../site --write-lock-files
#
# and commit the .terraform.lock.hcl files it writes: they hold hashes for
# every platform below, so "tofu init -lockfile=readonly" passes everywhere.

platforms = ["linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64", "windows_arm64"]

configuration "live/*" {}

# Providers no configuration uses yet can be added by hand as well.
provider "hashicorp/random" {
  newest = 1
}
