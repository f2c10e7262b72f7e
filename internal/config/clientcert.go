package config

import (
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// ClientCertificate is a client certificate and its key (PEM files,
// absolute paths) that tfmirror presents to one host requiring mutual
// TLS: an origin registry, a mirror or an OCI registry.
type ClientCertificate struct {
	CertFile, KeyFile string
	// ForLocationsFrom are the registries (host names) whose locations
	// on the host may be fetched presenting the certificate, besides the
	// host's own registry's.
	ForLocationsFrom []string
}

var clientCertSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "cert_file", Required: true}, {Name: "key_file", Required: true}, {Name: "for_locations_from"},
}}

// decodeClientCertificate reads a client_certificate "HOSTNAME" block;
// relative paths are relative to the manifest's directory.
func decodeClientCertificate(block *hcl.Block, dir string, certs map[addrs.Hostname]ClientCertificate) hcl.Diagnostics {
	host, diags := hostLabel(block)
	if diags.HasErrors() {
		return diags
	}
	content, ds := block.Body.Content(clientCertSchema)
	if ds.HasErrors() {
		return ds
	}
	var c ClientCertificate
	for name, dst := range map[string]*string{"cert_file": &c.CertFile, "key_file": &c.KeyFile} {
		if ds := gohcl.DecodeExpression(content.Attributes[name].Expr, nil, dst); ds.HasErrors() {
			return ds
		}
		if *dst == "" {
			return errAt(content.Attributes[name].Expr.Range(), "Empty "+name, name+" names no file.")
		}
		if !filepath.IsAbs(*dst) {
			*dst = filepath.Join(dir, *dst)
		}
	}
	if attr, ok := content.Attributes["for_locations_from"]; ok {
		if c.ForLocationsFrom, ds = decodeLocationsFrom(attr); ds.HasErrors() {
			return ds
		}
	}
	if _, dup := certs[host]; dup {
		return duplicate(block, "client_certificate", string(host))
	}
	certs[host] = c
	return nil
}
