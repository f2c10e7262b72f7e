variable "name" {
  type = string
}

terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "< 6.0.0"
    }
  }
}

# No required_providers entry for "tls": OpenTofu implies hashicorp/tls,
# and so does tfmirror.
resource "tls_private_key" "service" {
  algorithm = "ED25519"
}

resource "aws_secretsmanager_secret" "key" {
  name = "${var.name}-key"
}
