// Package netmirror reads a published mirror over HTTP(S) the way clients
// see it: index.json and <version>.json as application/json, plus the
// provenance files tfmirror keeps next to the archives. It implements
// mirror.Catalog for URLs.
//
// It does not verify anything itself; package mirror does.
package netmirror
