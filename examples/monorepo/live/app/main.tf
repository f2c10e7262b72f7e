terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0.0"
    }
  }
}

module "service" {
  source = "../../modules/service"
  name   = "checkout"
}
