package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// MirrorReader reads a mirror the way a client does. Paths are
// slash-separated and relative to the mirror's root; a missing file is an
// error wrapping fs.ErrNotExist.
type MirrorReader interface {
	// Providers lists the providers the mirror holds.
	Providers(ctx context.Context) ([]addrs.Provider, error)
	// ReadDocument returns a JSON document, failing as a client would (for
	// a URL: a content type other than application/json).
	ReadDocument(ctx context.Context, rel string) ([]byte, error)
	// OpenFile streams a file such as an archive.
	OpenFile(ctx context.Context, rel string) (io.ReadCloser, error)
	// Record returns the provenance kept for a release.
	Record(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error)
}

// Problem is one thing wrong with a mirror, at a path relative to its root.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// VerifyReport is the outcome of a verification.
type VerifyReport struct {
	Problems  []Problem
	Warnings  []Problem
	Providers int
	Versions  int
	Archives  int
}

// Verifier checks every provider, version and archive of a mirror.
type Verifier struct {
	Reader  MirrorReader
	Checker SignatureChecker
	Limits  hashing.ZipLimits
	// TempDir holds archives while they are hashed; "" means os.TempDir.
	TempDir string
}

// Verify checks the whole mirror. Problems are collected, not returned as
// errors; the error is only for failing to start (no provider list).
func (v *Verifier) Verify(ctx context.Context) (*VerifyReport, error) {
	providers, err := v.Reader.Providers(ctx)
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
	return r, nil
}

func (r *VerifyReport) problem(path, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (r *VerifyReport) warn(path, format string, args ...any) {
	r.Warnings = append(r.Warnings, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func slashPath(rel string) string { return strings.ReplaceAll(rel, "\\", "/") }

func (v *Verifier) verifyProvider(ctx context.Context, r *VerifyReport, p addrs.Provider) {
	indexPath := slashPath(layout.IndexPath(p))
	data, err := v.Reader.ReadDocument(ctx, indexPath)
	if err != nil {
		r.problem(indexPath, "cannot read: %v", err)
		return
	}
	idx, err := layout.DecodeIndex(data)
	if err != nil {
		r.problem(indexPath, "%v", err)
		return
	}
	keys := make([]string, 0, len(idx.Versions))
	for k := range idx.Versions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
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
	docPath := slashPath(layout.VersionPath(p, ver))
	data, err := v.Reader.ReadDocument(ctx, docPath)
	if err != nil {
		r.problem(docPath, "listed in index.json but cannot be read (clients fail on this): %v", err)
		return
	}
	doc, err := layout.DecodeVersion(data)
	if err != nil {
		r.problem(docPath, "%v", err)
		return
	}
	rec, recErr := v.Reader.Record(ctx, p, ver)
	var sums hashing.Sums
	if recErr != nil {
		r.warn(docPath, "no provenance kept for this release, so its origin cannot be re-verified: %v", recErr)
	} else {
		sums = v.verifyRecord(r, p, ver, rec)
	}
	plats := make([]string, 0, len(doc.Archives))
	for plat := range doc.Archives {
		plats = append(plats, plat)
	}
	slices.Sort(plats)
	for _, plat := range plats {
		r.Archives++
		computed, ok := v.verifyArchive(ctx, r, docPath, plat, doc.Archives[plat])
		if ok && recErr == nil {
			v.checkProvenance(r, docPath, plat, rec.Provenance, sums, computed)
		}
	}
}

// verifyRecord re-checks the kept SHA256SUMS and its signature.
func (v *Verifier) verifyRecord(r *VerifyReport, p addrs.Provider, ver addrs.Version, rec layout.Record) hashing.Sums {
	sumsPath := slashPath(layout.SumsPath(p, ver))
	sums, err := hashing.ParseSums(rec.Sums)
	if err != nil {
		r.problem(sumsPath, "%v", err)
		return nil
	}
	if len(rec.Provenance.SigningKeys) == 0 {
		if p.Hostname != addrs.DefaultRegistryHost {
			r.problem(sumsPath, "no signing keys are kept, but %s packages must be signed", p.Hostname.ForDisplay())
		}
		return sums
	}
	signer, err := v.Checker.CheckSignature(rec.Sums, rec.Signature, rec.Provenance.SigningKeys)
	if err != nil {
		r.problem(slashPath(layout.SignaturePath(p, ver)), "the kept signature does not verify against the kept keys: %v", err)
		return sums
	}
	if rec.Provenance.KeyID != "" && signer.KeyID != rec.Provenance.KeyID {
		r.problem(slashPath(layout.ProvenancePath(p, ver)), "recorded as verified by key %s, but key %s made the signature", rec.Provenance.KeyID, signer.KeyID)
	}
	return sums
}

// verifyArchive fetches one listed archive and checks its listed hashes.
func (v *Verifier) verifyArchive(ctx context.Context, r *VerifyReport, docPath, plat string, entry layout.ArchiveEntry) (hashing.ArchiveSums, bool) {
	rel, ok := archivePath(docPath, entry.URL)
	if !ok {
		r.warn(docPath, "%s: url %q is not in this mirror; not checked", plat, entry.URL)
		return hashing.ArchiveSums{}, false
	}
	computed, err := v.hashFile(ctx, rel)
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

// archivePath resolves a relative archive URL against its version
// document, refusing anything that leaves the mirror.
func archivePath(docPath, url string) (string, bool) {
	if url == "" || strings.Contains(url, ":") || strings.HasPrefix(url, "/") {
		return "", false
	}
	rel := path.Join(path.Dir(docPath), url)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// hashFile hashes a listed file: in place when the reader gives a file on
// disk, otherwise after copying it to a temporary file.
func (v *Verifier) hashFile(ctx context.Context, rel string) (hashing.ArchiveSums, error) {
	body, err := v.Reader.OpenFile(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return hashing.ArchiveSums{}, fmt.Errorf("listed but missing")
	}
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	defer body.Close()
	limits := v.Limits
	if limits == (hashing.ZipLimits{}) {
		limits = hashing.DefaultZipLimits
	}
	if f, ok := body.(interface{ Name() string }); ok {
		// Already a file on disk (the tree's own, or a download the reader
		// made): hash it where it is.
		sum, _, err := hashing.HashFile(f.Name())
		if err != nil {
			return hashing.ArchiveSums{}, err
		}
		return hashing.HashArchive(f.Name(), sum, limits)
	}
	tmp, err := os.CreateTemp(v.TempDir, "tfmirror-verify-*.zip")
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	w := hashing.NewWriter()
	_, err = io.Copy(io.MultiWriter(tmp, w), body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return hashing.ArchiveSums{}, fmt.Errorf("read: %w", err)
	}
	return hashing.HashArchive(tmp.Name(), w.Sum(), limits)
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
