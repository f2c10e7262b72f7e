// Package netmirror reads a published mirror over HTTP(S) the way clients
// see it: JSON documents must be served as application/json, missing
// files are 404s. Its Client is a layout.Reader, so verify, lock and the
// incremental planner read a URL through the same layout.Tree as a
// directory.
//
// It does not parse the tree's documents (package layout does) and does
// not verify anything itself (package mirror does).
package netmirror
