// Package cli is tfmirror's command line: the cobra command tree, flag
// validation, output for people and for CI, and the one map from errors to
// exit codes. It wires the adapters (manifest, registry client, OpenPGP)
// to the core (package mirror) and is the only package that knows cobra or
// exit codes.
package cli
