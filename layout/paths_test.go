package layout

import (
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

func TestPaths(t *testing.T) {
	tests := []struct {
		provider, version, platform string

		dir, index, versionDoc, archiveName string
	}{
		{
			provider: "hashicorp/foo", version: "1.1.0", platform: "linux_amd64",
			dir:         "registry.opentofu.org/hashicorp/foo",
			index:       "registry.opentofu.org/hashicorp/foo/index.json",
			versionDoc:  "registry.opentofu.org/hashicorp/foo/1.1.0.json",
			archiveName: "terraform-provider-foo_1.1.0_linux_amd64.zip",
		},
		{
			// Network mirrors are requested with the punycode hostname.
			provider: "bücher.example/ns/foo", version: "2.0.0", platform: "darwin_arm64",
			dir:         "xn--bcher-kva.example/ns/foo",
			index:       "xn--bcher-kva.example/ns/foo/index.json",
			versionDoc:  "xn--bcher-kva.example/ns/foo/2.0.0.json",
			archiveName: "terraform-provider-foo_2.0.0_darwin_arm64.zip",
		},
		{
			// Case is folded and :443 dropped before the host is a path.
			provider: "Example.COM:443/NS/Foo", version: "1.0.0", platform: "windows_386",
			dir:         "example.com/ns/foo",
			index:       "example.com/ns/foo/index.json",
			versionDoc:  "example.com/ns/foo/1.0.0.json",
			archiveName: "terraform-provider-foo_1.0.0_windows_386.zip",
		},
		{
			// Non-canonical versions are written canonically.
			provider: "hashicorp/foo", version: "1.0", platform: "linux_arm64",
			dir:         "registry.opentofu.org/hashicorp/foo",
			index:       "registry.opentofu.org/hashicorp/foo/index.json",
			versionDoc:  "registry.opentofu.org/hashicorp/foo/1.0.0.json",
			archiveName: "terraform-provider-foo_1.0.0_linux_arm64.zip",
		},
		{
			provider: "hashicorp/foo", version: "01.02.03", platform: "linux_amd64",
			dir:         "registry.opentofu.org/hashicorp/foo",
			index:       "registry.opentofu.org/hashicorp/foo/index.json",
			versionDoc:  "registry.opentofu.org/hashicorp/foo/1.2.3.json",
			archiveName: "terraform-provider-foo_1.2.3_linux_amd64.zip",
		},
		{
			provider: "hashicorp/foo", version: "1.2.0-beta1", platform: "linux_amd64",
			dir:         "registry.opentofu.org/hashicorp/foo",
			index:       "registry.opentofu.org/hashicorp/foo/index.json",
			versionDoc:  "registry.opentofu.org/hashicorp/foo/1.2.0-beta1.json",
			archiveName: "terraform-provider-foo_1.2.0-beta1_linux_amd64.zip",
		},
		{
			provider: "localhost:8443/a/b", version: "0.1.0", platform: "freebsd_arm",
			dir:         "localhost:8443/a/b",
			index:       "localhost:8443/a/b/index.json",
			versionDoc:  "localhost:8443/a/b/0.1.0.json",
			archiveName: "terraform-provider-b_0.1.0_freebsd_arm.zip",
		},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"@"+tt.version, func(t *testing.T) {
			p := addrs.MustParseProvider(tt.provider)
			v := addrs.MustParseVersion(tt.version)
			plat := addrs.MustParsePlatform(tt.platform)
			check := func(what, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %q, want %q", what, got, want)
				}
			}
			check("ProviderDir", ProviderDir(p), filepath.FromSlash(tt.dir))
			check("IndexPath", IndexPath(p), filepath.FromSlash(tt.index))
			check("VersionPath", VersionPath(p, v), filepath.FromSlash(tt.versionDoc))
			check("ArchiveName", ArchiveName(p, v, plat), tt.archiveName)
			check("ArchivePath", ArchivePath(p, v, plat), filepath.FromSlash(tt.dir+"/"+tt.archiveName))
		})
	}
}
