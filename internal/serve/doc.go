// Package serve serves a mirror tree over HTTPS for trials and small
// deployments: the content types OpenTofu requires, no directory listings,
// tfmirror's private directory hidden, and a self-signed certificate
// authority when the operator brings no certificate.
//
// It serves files; it does not build, verify or change the tree.
package serve
