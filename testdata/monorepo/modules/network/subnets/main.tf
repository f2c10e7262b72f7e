# No required_providers here: bar_subnet implies hashicorp/bar, unconstrained.
resource "bar_subnet" "this" {}
