// Package serve serves a mirror tree over HTTPS for trials and small
// deployments: the content types OpenTofu requires, no directory listings,
// tfmirror's private directory hidden, and a self-signed certificate
// authority when the operator brings no certificate.
//
// It serves only the site: regular files beneath the root, through links
// that stay inside it; a link that leads out of the root, a directory, a
// pipe or a device is a 404.
//
// It bounds what clients can hold, so that a flood of slow ones cannot
// starve normal ones (Limits; Defaults lists the defaults and why):
//   - a connection must finish its TLS handshake and its first request's
//     headers within HeaderTimeout (10s) of being accepted, each later
//     request's headers within HeaderTimeout, a whole request within
//     ReadTimeout (30s); an idle keep-alive connection is closed after
//     IdleTimeout (30s), and a client that reads nothing of a response
//     for StallTimeout (60s) is dropped;
//   - at most MaxConns connections are open (half the descriptors the
//     process may open, at most 1024), and at most MaxConnsPerClient (32)
//     of one client IP address;
//   - when either bound is reached, room is made by closing a connection
//     that is not serving a request: the one idle the longest, else the
//     one that has waited the longest for its handshake or headers (of
//     that client, for the per-client bound). Connections serving a
//     request are never closed for room: a new connection then waits (the
//     total bound), or is closed (the per-client bound).
//
// It serves files; it does not build, verify or change the tree.
package serve
