package layout

import (
	"fmt"
	"path"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// ProviderDir is the directory of a provider in a network mirror, relative
// to the tree's root: the punycode hostname a client requests, then the
// namespace and type.
func ProviderDir(p addrs.Provider) string {
	return path.Join(string(p.Hostname), p.Namespace, p.Type)
}

// IndexPath is the relative path of a provider's index.json.
func IndexPath(p addrs.Provider) string {
	return path.Join(ProviderDir(p), "index.json")
}

// VersionPath is the relative path of a provider version's <version>.json.
func VersionPath(p addrs.Provider, v addrs.Version) string {
	return path.Join(ProviderDir(p), v.String()+".json")
}

// ArchiveName is the file name of a packed provider archive, the same name
// OpenTofu's own mirror command gives it.
func ArchiveName(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return fmt.Sprintf("terraform-provider-%s_%s_%s.zip", p.Type, v.String(), plat)
}

// ArchivePath is the relative path of a packed provider archive.
func ArchivePath(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return path.Join(ProviderDir(p), ArchiveName(p, v, plat))
}

// releasePrefix is the common start of a release's kept upstream files.
func releasePrefix(p addrs.Provider, v addrs.Version) string {
	return path.Join(ProviderDir(p), fmt.Sprintf("terraform-provider-%s_%s_", p.Type, v.String()))
}

// SumsPath is the relative path of a release's kept upstream SHA256SUMS.
func SumsPath(p addrs.Provider, v addrs.Version) string { return releasePrefix(p, v) + "SHA256SUMS" }

// SignaturePath is the relative path of the kept detached signature of
// SHA256SUMS.
func SignaturePath(p addrs.Provider, v addrs.Version) string {
	return releasePrefix(p, v) + "SHA256SUMS.sig"
}

// ProvenancePath is the relative path of a release's provenance record.
func ProvenancePath(p addrs.Provider, v addrs.Version) string {
	return releasePrefix(p, v) + "provenance.json"
}

// SBOMSuffix ends the name of every SBOM of a tree.
const SBOMSuffix = ".cdx.json"

// SBOMName is the file name of a package's SBOM, a CycloneDX JSON
// document beside its archive: the archive's name with .cdx.json for .zip.
func SBOMName(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return fmt.Sprintf("terraform-provider-%s_%s_%s%s", p.Type, v.String(), plat, SBOMSuffix)
}

// SBOMPath is the relative path of a package's SBOM.
func SBOMPath(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return path.Join(ProviderDir(p), SBOMName(p, v, plat))
}
