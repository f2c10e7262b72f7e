# Override files are read last; this entry replaces the qux entry of
# main.tf.json, so "~> 1.0" no longer applies.
terraform {
  required_providers {
    qux = {
      source  = "registry.test/acme/qux"
      version = "< 1.5.0"
    }
  }
}
