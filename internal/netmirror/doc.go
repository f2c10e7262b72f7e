// Package netmirror reads a published mirror over HTTP(S) the way clients
// see it: JSON documents must be served as application/json, missing
// files are 404s. Its Client is a layout.Reader, so verify, lock and the
// incremental planner read a URL through the same layout.Tree as a
// directory.
//
// The archive URLs of a network mirror's <version>.json (Hashed) stay on
// the mirror's origin (scheme, host and port) unless the location rule
// allows their host (httpx.Locations, allowed_location_hosts in the
// manifest): a mirror's documents cannot send tfmirror to other hosts, or
// to plain-http or loopback services; a refusal names the mirror, the
// provider, version and platform and the URL (redacted). Everything a
// Client reads shares the run's record of slow hosts (httpx.Hosts).
//
// It does not parse the tree's documents (package layout does) and does
// not verify anything itself (package mirror does).
package netmirror
