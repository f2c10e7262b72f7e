package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// TestLocationSettings: the manifest's say over locations: hosts a
// registry or mirror may send tfmirror to (allowed_location_hosts), which
// registries' locations may carry a host's token or client certificate
// (for_locations_from, the token possibly from TF_TOKEN_*), and OCI token
// services on another host (oci_token_realms); all normalised as the rule
// compares them.
func TestLocationSettings(t *testing.T) {
	dir := t.TempDir()
	_, certFile, keyFile := testca.New(t).WriteFiles(t, dir, "certs.example.com")
	m, err := config.Parse([]byte(`settings {
  allowed_location_hosts = ["127.0.0.1:8080", "Artifacts.Internal", "[::1]:9000", "127.0.0.1:8080"]
  oci_token_realms = { "Registry.Example.com:5000" = ["auth.example.com", "auth.example.com:8443"] }
}
credentials "code.example.com" {
  token              = "secret"
  for_locations_from = ["Registry.Example.com", "registry.example.com", "other.example:8443"]
}
credentials "env.example.com" {
  for_locations_from = ["registry.example.com"]
}
client_certificate "certs.example.com" {
  cert_file          = "`+certFile+`"
  key_file           = "`+keyFile+`"
  for_locations_from = ["registry.example.com"]
}
`), dir+"/mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := httpx.Locations{
		Allowed:          []string{"127.0.0.1:8080", "artifacts.internal", "[::1]:9000"},
		CredentialsFrom:  map[string][]string{"code.example.com": {"registry.example.com", "other.example:8443"}, "env.example.com": {"registry.example.com"}},
		CertificatesFrom: map[string][]string{"certs.example.com": {"registry.example.com"}},
	}
	if diff := cmp.Diff(want, m.Locations()); diff != "" {
		t.Errorf("Locations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"registry.example.com:5000": {"auth.example.com", "auth.example.com:8443"}}, m.Settings.OCITokenRealms); diff != "" {
		t.Errorf("oci_token_realms (-want +got):\n%s", diff)
	}
	s, err := m.SettingsFor(settings.DefaultFlags(), settings.Process{Environ: []string{"TF_TOKEN_env_example_com=from-env"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tokens["env.example.com"] != "from-env" || s.Tokens["code.example.com"] != "secret" || s.Hosts == nil {
		t.Errorf("settings: tokens %v, hosts %v", s.Tokens, s.Hosts)
	}
	if diff := cmp.Diff(want, s.Locations); diff != "" {
		t.Errorf("settings' Locations (-want +got):\n%s", diff)
	}
}

// TestLocationSettingsErrors: each bad value is reported at its position.
func TestLocationSettingsErrors(t *testing.T) {
	for src, want := range map[string]string{
		`settings { allowed_location_hosts = ["https://x.example"] }`:                                                             `mirror.hcl:1:37: Invalid allowed_location_hosts: "https://x.example" is not a host or host:port`,
		`settings { allowed_location_hosts = ["x.example/path"] }`:                                                                `mirror.hcl:1:37: Invalid allowed_location_hosts`,
		`settings { allowed_location_hosts = ["x.example:0"] }`:                                                                   `mirror.hcl:1:37: Invalid allowed_location_hosts: "x.example:0": port "0" is not a number from 1 to 65535`,
		`settings { allowed_location_hosts = "x.example" }`:                                                                       `mirror.hcl:1:38: Unsuitable value type`,
		`settings { oci_token_realms = { "r.example" = ["a b"] } }`:                                                               `mirror.hcl:1:31: Invalid oci_token_realms: realm of r.example`,
		`settings { oci_token_realms = { "r.example/x" = ["a"] } }`:                                                               `mirror.hcl:1:31: Invalid oci_token_realms: registry "r.example/x"`,
		`settings { oci_token_realms = ["a"] }`:                                                                                   `mirror.hcl:1:31: Unsuitable value type`,
		"credentials \"h.example\" {\n  for_locations_from = [\"a/b\"]\n}":                                                        `mirror.hcl:2:24: Invalid for_locations_from: "a/b" is not a registry host name`,
		"credentials \"h.example\" {\n  for_locations_from = [\"bad host\"]\n}":                                                   `mirror.hcl:2:24: Invalid for_locations_from`,
		"credentials \"h.example\" {\n}":                                                                                          `mirror.hcl:1:25: Missing token`,
		"credentials \"h.example\" {\n  token = \"t\"\n}\ncredentials \"H.example\" {\n  for_locations_from = [\"r.example\"]\n}": `mirror.hcl:4:1: Duplicate credentials block`,
	} {
		_, err := config.Parse([]byte(src), "mirror.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\nerr = %v\nwant %q", src, err, want)
		}
	}
}
