// Package e2e holds end-to-end tests that drive the real tfmirror binary, a
// real OpenTofu and a real nginx.
//
// The tests only run when TFMIRROR_E2E=1, which ./scripts/test sets after
// providing the tools:
//
//	TFMIRROR_TOFU      path of an OpenTofu 1.12.x binary
//	TFMIRROR_TOFU_OLD  path of an OpenTofu 1.10.x binary (optional locally)
//	TFMIRROR_NGINX     path of nginx
//
// Terraform is used when /usr/local/bin/terraform (or TFMIRROR_TERRAFORM)
// exists and skipped otherwise.
package e2e
