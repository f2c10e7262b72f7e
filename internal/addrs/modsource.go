package addrs

import (
	"net/url"
	"path"
	"regexp"
	"strings"

	tfaddr "github.com/opentofu/registry-address/v2"
)

// SplitModuleSubdir is go-getter's SourceDirSubdir, which OpenTofu and
// Terraform apply to a remote module source: the first "//" after the
// scheme's "://" splits the package from the subdirectory, and a "?query"
// after the subdirectory belongs to the package.
func SplitModuleSubdir(src string) (pkg, subdir string) {
	stop := len(src)
	if i := strings.Index(src, "?"); i > -1 {
		stop = i
	}
	offset := 0
	if i := strings.Index(src[:stop], "://"); i > -1 {
		offset = i + 3
	}
	i := strings.Index(src[offset:stop], "//")
	if i == -1 {
		return src, ""
	}
	i += offset
	subdir = src[i+2:]
	src = src[:i]
	if q := strings.Index(subdir, "?"); q > -1 {
		src += subdir[q:]
		subdir = subdir[:q]
	}
	return src, subdir
}

// forcedGetter matches go-getter's "getter::" prefix.
var forcedGetter = regexp.MustCompile(`^([A-Za-z0-9]+)::(.+)$`)

// SplitForcedGetter splits go-getter's "getter::" prefix off a source: the
// getter ("" without one) and the rest.
func SplitForcedGetter(src string) (getter, rest string) {
	if m := forcedGetter.FindStringSubmatch(src); m != nil {
		return m[1], m[2]
	}
	return "", src
}

// RecordedModuleSource is a non-local module call's source as OpenTofu
// records it in .terraform/modules/modules.json, and whether that can be
// told without go-getter: a registry address (its host always named), or
// a remote source written as a URL, with or without a "getter::" prefix
// (go-getter's detection keeps those as written; the subdirectory is
// cleaned and put before the query). Shorthands that go-getter's detectors
// rewrite (github.com/org/repo, git@host:path, bucket hosts, absolute
// paths) give false.
func RecordedModuleSource(raw string) (string, bool) {
	if m, err := tfaddr.ParseModuleSource(raw); err == nil {
		if m.Subdir != "" {
			return m.Package.String() + "//" + m.Subdir, true
		}
		return m.Package.String(), true
	}
	return remoteRecorded(raw)
}

// TerraformModuleHost is the registry Terraform assumes for a module
// address that names no host, where OpenTofu assumes DefaultModuleHost.
const TerraformModuleHost = TerraformRegistryHost

// SameRecordedModuleSource reports whether recorded, a Source that
// OpenTofu or Terraform wrote in modules.json, is the call raw's, as
// RecordedModuleSource tells it; ok is false when that cannot be told. A
// registry address without a host is recorded with the default host of
// whichever client installed it.
func SameRecordedModuleSource(raw, recorded string) (same, ok bool) {
	want, ok := RecordedModuleSource(raw)
	if !ok || want == recorded {
		return want == recorded, ok
	}
	if rest, isDefault := strings.CutPrefix(want, string(DefaultModuleHost)+"/"); isDefault && !strings.HasPrefix(raw, string(DefaultModuleHost)) {
		return recorded == string(TerraformModuleHost)+"/"+rest, true
	}
	return false, true
}

// remoteRecorded is RecordedModuleSource of a source that is not a
// registry address.
func remoteRecorded(raw string) (string, bool) {
	pkg, subdir := SplitModuleSubdir(raw)
	_, rest := SplitForcedGetter(pkg)
	if u, err := url.Parse(rest); err != nil || u.Scheme == "" {
		return "", false
	}
	if subdir == "" {
		return pkg, true
	}
	subdir = path.Clean(subdir)
	if base, query, ok := strings.Cut(pkg, "?"); ok {
		return base + "//" + subdir + "?" + query, true
	}
	return pkg + "//" + subdir, true
}
