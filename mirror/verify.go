package mirror

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
	"github.com/tfmirror/tfmirror/layout"
)

// Problem is one thing wrong with a mirror, at a path relative to its root.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// VerifyReport is the outcome of a verification.
type VerifyReport struct {
	Problems []Problem
	Warnings []Problem
	// Accepted are releases the trust policy accepts with a warning (an
	// expired key, an unsigned release where that is allowed): not a
	// problem of the mirror, but what a stricter policy would refuse.
	Accepted  []Problem
	Providers int
	Versions  int
	Archives  int
	// Modules and ModuleVersions count the module packages checked.
	Modules        int
	ModuleVersions int
}

// Verifier checks every provider, version and archive of a mirror, the way
// clients see it, and re-authenticates what it keeps of each release's
// origin under the trust policy.
type Verifier struct {
	Mirror  *layout.Tree
	Checker SignatureChecker
	Trust   TrustPolicy
	Limits  hashing.ZipLimits
	// TempDir holds archives while they are hashed; "" means os.TempDir.
	TempDir string
}

// Verify checks the whole mirror. Problems are collected, not returned as
// errors; the error is only for failing to start (no provider list).
func (v *Verifier) Verify(ctx context.Context) (*VerifyReport, error) {
	providers, err := v.Mirror.Providers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	r := &VerifyReport{}
	for _, p := range providers {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.Providers++
		v.verifyProvider(ctx, r, p)
	}
	if err := v.verifyModules(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *VerifyReport) problem(path, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (r *VerifyReport) warn(path, format string, args ...any) {
	r.Warnings = append(r.Warnings, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *Verifier) verifyProvider(ctx context.Context, r *VerifyReport, p addrs.Provider) {
	indexPath := layout.IndexPath(p)
	idx, err := v.Mirror.ReadIndex(ctx, p)
	if err != nil {
		r.problem(indexPath, "%v", err)
		return
	}
	if len(idx.Versions) == 0 && !v.exists(ctx, indexPath) {
		r.problem(indexPath, "cannot read: the catalog lists the provider, but it has no index.json")
		return
	}
	for _, key := range slices.Sorted(maps.Keys(idx.Versions)) {
		ver, err := addrs.ParseVersion(key)
		if err != nil {
			r.problem(indexPath, "version %q: %v", key, err)
			continue
		}
		if ver.String() != key {
			r.problem(indexPath, "version %q is not canonical: clients request %s.json", key, ver)
		}
		r.Versions++
		v.verifyVersion(ctx, r, p, ver)
	}
}

func (v *Verifier) verifyVersion(ctx context.Context, r *VerifyReport, p addrs.Provider, ver addrs.Version) {
	docPath := layout.VersionPath(p, ver)
	if !v.exists(ctx, docPath) {
		r.problem(docPath, "listed in index.json but cannot be read (clients fail on this)")
		return
	}
	doc, err := v.Mirror.ReadVersion(ctx, p, ver)
	if err != nil {
		r.problem(docPath, "%v", err)
		return
	}
	rec, recErr := v.Mirror.ReadRecord(ctx, p, ver)
	var sums hashing.Sums
	if recErr != nil {
		r.warn(docPath, "no provenance kept for this release, so its origin cannot be re-verified: %v", recErr)
	} else {
		sums = v.verifyRecord(r, p, ver, rec, treeRecordPaths(p, ver))
	}
	for _, plat := range slices.Sorted(maps.Keys(doc.Archives)) {
		r.Archives++
		computed, ok := v.verifyArchive(ctx, r, p, ver, plat, doc.Archives[plat])
		if ok && recErr == nil {
			v.checkProvenance(r, docPath, plat, rec.Provenance, sums, computed)
		}
	}
}

// exists reports whether the mirror has a file; an error other than
// "missing" counts as present, so reading it reports the error.
func (v *Verifier) exists(ctx context.Context, rel string) bool {
	_, err := v.Mirror.Reader().Stat(ctx, rel)
	return !errors.Is(err, fs.ErrNotExist)
}

// recordPaths are where problems with a kept record are reported: the
// tree's files, or for a registry the version's repository:tag.
type recordPaths struct{ sums, signature, provenance string }

func treeRecordPaths(p addrs.Provider, ver addrs.Version) recordPaths {
	return recordPaths{layout.SumsPath(p, ver), layout.SignaturePath(p, ver), layout.ProvenancePath(p, ver)}
}

// verifyRecord re-authenticates the kept SHA256SUMS, signature and keys
// under the trust policy, and checks the recorded signer; problems are
// reported at.
func (v *Verifier) verifyRecord(r *VerifyReport, p addrs.Provider, ver addrs.Version, rec layout.Record, at recordPaths) hashing.Sums {
	verdict, err := v.Trust.Authenticate(v.Checker, Package{Provider: p, Version: ver}, KeptEvidence(rec))
	var verr *VerificationError
	if errors.As(err, &verr) {
		switch verr.Evidence {
		case EvidenceSignature:
			r.problem(at.signature, "the kept signature does not verify against the kept keys: %v", err)
		case EvidenceSigner:
			r.problem(at.provenance, "%v", err)
		default:
			r.problem(at.sums, "%v", err)
		}
		return verdict.Sums
	}
	if err != nil {
		r.problem(at.sums, "%v", err)
		return nil
	}
	for _, w := range verdict.Warnings {
		r.Accepted = append(r.Accepted, Problem{Path: at.sums, Message: w})
	}
	if rec.Provenance.KeyID != "" && verdict.Signer.KeyID != rec.Provenance.KeyID {
		r.problem(at.provenance, "recorded as verified by key %s, but key %s made the signature", rec.Provenance.KeyID, verdict.Signer.KeyID)
	}
	return verdict.Sums
}

// verifyArchive fetches one listed archive and checks its listed hashes.
func (v *Verifier) verifyArchive(ctx context.Context, r *VerifyReport, p addrs.Provider, ver addrs.Version, plat string, entry layout.ArchiveEntry) (hashing.ArchiveSums, bool) {
	docPath := layout.VersionPath(p, ver)
	rel, ok := archiveRel(r, p, ver, plat, entry.URL)
	if !ok {
		return hashing.ArchiveSums{}, false
	}
	computed, err := treeArchiveSums(ctx, v.Mirror, rel, v.Limits, v.TempDir)
	if err != nil {
		r.problem(rel, "%s archive: %v", plat, err)
		return hashing.ArchiveSums{}, false
	}
	if len(entry.Hashes) == 0 {
		r.problem(docPath, "%s lists no hashes: clients would install it unverified", plat)
	}
	known := computed.All()
	for _, h := range entry.Hashes {
		if !slices.Contains(known, h) {
			r.problem(docPath, "%s lists %s, which does not match %s (its hashes are %v)", plat, h, rel, known)
		}
	}
	return computed, true
}

// archiveRel returns where in the mirror a release's archive is, from
// the url its version document lists. Clients resolve a relative url
// against the version document, so the only one that names this
// release's archive is its own name, layout.ArchiveName: any other
// relative url names a file outside the release or another package's
// archive, which is a problem. An absolute url (a scheme, or a leading
// "/") is outside this mirror, as other tools may write: a warning, not
// checked.
func archiveRel(r *VerifyReport, p addrs.Provider, ver addrs.Version, plat, rawURL string) (string, bool) {
	docPath := layout.VersionPath(p, ver)
	if isAbsoluteURL(rawURL) {
		r.warn(docPath, "%s: url %q is not in this mirror; not checked", plat, rawURL)
		return "", false
	}
	platform, err := addrs.ParsePlatform(plat)
	if err != nil {
		r.problem(docPath, "archive %q: %v", plat, err)
		return "", false
	}
	if own := layout.ArchiveName(p, ver, platform); rawURL != own {
		r.problem(docPath, "%s: url %q is not this release's own archive %q: relative to this document it names a file outside the release or another package's archive", plat, rawURL, own)
		return "", false
	}
	return layout.ArchivePath(p, ver, platform), true
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

// checkProvenance ties an archive to the signed SHA256SUMS it came with.
func (v *Verifier) checkProvenance(r *VerifyReport, docPath, plat string, prov layout.Provenance, sums hashing.Sums, computed hashing.ArchiveSums) {
	a, ok := prov.Archives[plat]
	if !ok {
		r.problem(docPath, "%s is not in the release's provenance record", plat)
		return
	}
	if a.H1 != computed.H1Unpacked {
		r.problem(docPath, "%s: provenance records %s, the archive unpacks to %s", plat, a.H1, computed.H1Unpacked)
	}
	if sums == nil {
		return
	}
	listed, ok := sums[a.Filename]
	if !ok {
		r.problem(docPath, "%s: the kept SHA256SUMS has no line for %q", plat, a.Filename)
		return
	}
	if hashing.ZH(listed) != computed.ZH {
		r.problem(docPath, "%s: the archive is %s, but the signed SHA256SUMS says %s", plat, computed.ZH, hashing.ZH(listed))
	}
}
