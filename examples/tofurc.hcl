# OpenTofu CLI configuration (~/.tofurc, or the file named by
# TF_CLI_CONFIG_FILE) that installs every provider from the mirror and never
# contacts the public registries. The URL must end with "/".
provider_installation {
  network_mirror {
    url = "https://mirror.example.com/providers/"
    # OpenTofu >= 1.12: copy the mirror's h1: and zh: hashes for every
    # mirrored platform into .terraform.lock.hcl, so the lock file works on
    # every platform, not only the one that ran "tofu init".
    trust_all_hashes = true
  }
}
