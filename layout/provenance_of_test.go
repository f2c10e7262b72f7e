package layout

import (
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

func TestProvenanceArchiveOf(t *testing.T) {
	p := addrs.Provider{Hostname: "registry.opentofu.org", Namespace: "hashicorp", Type: "aws"}
	v := addrs.MustParseVersion("5.1.0")
	plat := addrs.Platform{OS: "linux", Arch: "amd64"}
	for _, c := range []struct {
		entry ProvenanceArchive
		ok    bool
	}{
		{ProvenanceArchive{Filename: "terraform-provider-aws_5.1.0_linux_amd64.zip", SBOM: SBOMName(p, v, plat)}, true},
		{ProvenanceArchive{Filename: "aws-linux.zip"}, true}, // an unusual name says nothing
		{ProvenanceArchive{Filename: "terraform-provider-google_5.1.0_linux_amd64.zip"}, false},
		{ProvenanceArchive{Filename: "terraform-provider-aws_5.0.0_linux_amd64.zip"}, false},
		{ProvenanceArchive{Filename: "terraform-provider-aws_5.1.0_darwin_arm64.zip"}, false},
		{ProvenanceArchive{Filename: "aws-linux.zip", SBOM: "terraform-provider-google_5.1.0_linux_amd64.cdx.json"}, false},
	} {
		if err := c.entry.Of(p, v, plat); (err == nil) != c.ok {
			t.Errorf("%+v.Of(%s %s %s) = %v, want ok=%v", c.entry, p, v, plat, err, c.ok)
		}
	}
}
