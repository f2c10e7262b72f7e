// Package config reads tfmirror's HCL manifest (mirror.hcl) into the
// requirements package mirror builds, plus the registry host overrides and
// credentials the registry client needs.
//
// It owns the manifest's syntax and its error messages, which point at the
// file, line and column at fault; among them the settings of the location
// rule (locations.go: allowed_location_hosts, for_locations_from,
// oci_token_realms), whose meaning is httpx.Locations' and ocistore's. It does no network access and writes
// nothing; it reads the environment only through the values it is given.
package config
