// Package serve serves a mirror tree over HTTPS for trials and small
// deployments: the content types OpenTofu requires, no directory listings,
// tfmirror's private directory hidden, and a self-signed certificate
// authority when the operator brings no certificate.
//
// It serves only the site: regular files beneath the root, through links
// that stay inside it; a link that leads out of the root, a directory, a
// pipe or a device is a 404. It bounds what a client can hold: handshake
// and header, request, idle and write-stall timeouts and a connection
// limit (Limits; Defaults lists the defaults and why).
//
// It serves files; it does not build, verify or change the tree.
package serve
