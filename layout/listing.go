package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Problem is one thing wrong with a mirror: where (a path relative to its
// root, or a registry's repository:tag) and what.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Listing is what a mirror tells clients about one version: the packages
// they may install, each with the hashes they check its archive against,
// and what is wrong with the telling itself. A tree tells it in
// <version>.json, a registry in the version tag's index and manifests.
type Listing struct {
	// Where names the version's listing in problems.
	Where string
	// Packages are the listed packages this mirror holds, by platform;
	// nil when the listing cannot be read at all.
	Packages map[addrs.Platform]ListedPackage
	// Elsewhere counts listed packages whose archive is not in this
	// mirror (another tool may point at other hosts): not checked.
	Elsewhere int
	// Sums, Signature and Provenance name where problems with the kept
	// origin files are reported.
	Sums, Signature, Provenance string
	Problems, Warnings          []Problem
}

// ListedPackage is one listed package.
type ListedPackage struct {
	// Hashes are what clients check the archive against.
	Hashes []hashing.Hash
	// Archive names the archive in problems.
	Archive string
}

func (l *Listing) problem(path, format string, args ...any) {
	l.Problems = append(l.Problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// ListVersions returns the versions a provider's index.json lists, with
// what is wrong with it: a version that does not parse is left out, one
// that is not in canonical form is listed and reported (clients request
// the canonical name).
func (t *Tree) ListVersions(ctx context.Context, p addrs.Provider) ([]addrs.Version, []Problem, error) {
	indexPath := IndexPath(p)
	idx, err := t.ReadIndex(ctx, p)
	if err != nil {
		return nil, []Problem{{indexPath, err.Error()}}, nil
	}
	if len(idx.Versions) == 0 && !t.exists(ctx, indexPath) {
		return nil, []Problem{{indexPath, "cannot read: the provider is named (by catalog.json, or the manifest), but the mirror has no index.json for it"}}, nil
	}
	var out []addrs.Version
	var problems []Problem
	for _, key := range slices.Sorted(maps.Keys(idx.Versions)) {
		ver, err := addrs.ParseVersion(key)
		if err != nil {
			problems = append(problems, Problem{indexPath, fmt.Sprintf("version %q: %v", key, err)})
			continue
		}
		if ver.String() != key {
			problems = append(problems, Problem{indexPath, fmt.Sprintf("version %q is not canonical: clients request %s.json", key, ver)})
		}
		out = append(out, ver)
	}
	return out, problems, nil
}

// exists reports whether the tree has a file; an error other than
// "missing" counts as present, so reading it reports the error.
func (t *Tree) exists(ctx context.Context, rel string) bool {
	_, err := t.r.Stat(ctx, rel)
	return !errors.Is(err, fs.ErrNotExist)
}

// ListVersion returns what the version's <version>.json lists. Clients
// resolve an archive's url against the document, so the only url that
// names this release's archive is its own name (ArchiveName): any other
// relative url names a file outside the release or another package's
// archive, which is a problem. An absolute url (a scheme, or a leading
// "/") is outside this mirror, as other tools may write: a warning, not
// checked.
func (t *Tree) ListVersion(ctx context.Context, p addrs.Provider, v addrs.Version) Listing {
	docPath := VersionPath(p, v)
	l := Listing{Where: docPath, Sums: SumsPath(p, v), Signature: SignaturePath(p, v), Provenance: ProvenancePath(p, v)}
	doc, err := t.ReadVersion(ctx, p, v) // a missing document reads as empty
	switch {
	case (err != nil || len(doc.Archives) == 0) && !t.exists(ctx, docPath):
		l.problem(docPath, "listed in index.json but cannot be read (clients fail on this)")
		return l
	case err != nil:
		l.problem(docPath, "%v", err)
		return l
	}
	l.Packages = map[addrs.Platform]ListedPackage{}
	for _, plat := range slices.Sorted(maps.Keys(doc.Archives)) {
		entry := doc.Archives[plat]
		if isAbsoluteURL(entry.URL) {
			l.Elsewhere++
			l.Warnings = append(l.Warnings, Problem{docPath, fmt.Sprintf("%s: url %q is not in this mirror; not checked", plat, entry.URL)})
			continue
		}
		platform, err := addrs.ParsePlatform(plat)
		if err != nil {
			l.Elsewhere++
			l.problem(docPath, "archive %q: %v", plat, err)
			continue
		}
		if own := ArchiveName(p, v, platform); entry.URL != own {
			l.Elsewhere++
			l.problem(docPath, "%s: url %q is not this release's own archive %q: relative to this document it names a file outside the release or another package's archive", plat, entry.URL, own)
			continue
		}
		if len(entry.Hashes) == 0 {
			l.problem(docPath, "%s lists no hashes: clients would install it unverified", plat)
		}
		l.Packages[platform] = ListedPackage{Hashes: entry.Hashes, Archive: ArchivePath(p, v, platform)}
	}
	return l
}

// isAbsoluteURL reports a url with a scheme or a leading "/": one that
// does not resolve against the version document's directory.
func isAbsoluteURL(rawURL string) bool {
	if strings.HasPrefix(rawURL, "/") {
		return true
	}
	u, err := url.Parse(rawURL)
	return err == nil && u.Scheme != ""
}

// LocalArchive returns where a package's archive is on the local
// filesystem, when the tree is a local directory.
func (t *Tree) LocalArchive(p addrs.Provider, v addrs.Version, plat addrs.Platform) (string, bool) {
	return t.LocalPath(ArchivePath(p, v, plat))
}
