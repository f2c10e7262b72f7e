package mirror

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// MirrorSource is a built mirror as the origin of a build: a directory,
// a bucket, a published URL or an OCI registry or layout. It offers what
// the mirror holds, with the SHA256SUMS, signature and signing keys the
// mirror kept of each release's origin, so a build from it makes the
// same trust decision and the same checks as a build from the origin
// itself, and never contacts the origin. A release the mirror keeps no
// provenance for offers nothing, unless Hashed reads the same mirror's
// hashes: a network mirror another tool made, whose hashes alone then
// vouch for its packages.
type MirrorSource struct {
	Mirror Packages
	Hashed *HashedSource

	mu      sync.Mutex
	records map[string]*layout.Record
}

// mirrorScheme marks the URLs a MirrorSource hands out: they name a file
// of the mirror, for its Fetch only.
const mirrorScheme = "tfmirror-mirror"

// AvailableVersions lists the versions the mirror holds.
func (s *MirrorSource) AvailableVersions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	versions, err := s.Mirror.Versions(ctx, p)
	return mirrorVersions(s.Mirror.Location(), versions, err)
}

// PackageMeta describes a package from the release's kept provenance.
func (s *MirrorSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	rec, err := s.record(ctx, p, v)
	if s.Hashed != nil && errors.Is(err, fs.ErrNotExist) {
		return s.Hashed.PackageMeta(ctx, p, v, plat)
	}
	if err != nil {
		return PackageMeta{}, err
	}
	a, ok := rec.Provenance.Archives[plat.String()]
	if !ok {
		return PackageMeta{}, fmt.Errorf("%s holds no %s package of %s %s: %w", s.Mirror.Location(), plat, p, v, ErrPlatformUnavailable)
	}
	hexSum, ok := strings.CutPrefix(string(a.ZH), hashing.SchemeZH)
	sum, err := hashing.ParseHex(hexSum)
	if !ok || err != nil {
		return PackageMeta{}, fmt.Errorf("%s: %s %s %s: the provenance records no valid zh: hash (%q)", s.Mirror.Location(), p, v, plat, a.ZH)
	}
	meta := PackageMeta{
		Filename:     a.Filename,
		DownloadURL:  s.url("archive", p, v, plat.String()),
		SumsURL:      s.url("sums", p, v, ""),
		SignatureURL: s.url("signature", p, v, ""),
		SHA256:       sum,
		SigningKeys:  rec.Provenance.SigningKeys,
		Size:         a.Size,
	}
	if rec.Provenance.HashesOnly != "" {
		// What the mirror's own upstream vouched for with hashes is no
		// more than that here: its kept SHA256SUMS lists the digests.
		meta.HashesOnly, meta.SignatureURL, meta.SigningKeys = rec.Provenance.HashesOnly+", via "+s.Mirror.Location(), nil, nil
	}
	return meta, nil
}

func (s *MirrorSource) url(kind string, p addrs.Provider, v addrs.Version, plat string) *url.URL {
	q := url.Values{"provider": {p.String()}, "version": {v.String()}}
	if plat != "" {
		q.Set("platform", plat)
	}
	return &url.URL{Scheme: mirrorScheme, Opaque: kind, RawQuery: q.Encode()}
}

// Fetch copies a file of the mirror named by a URL PackageMeta gave.
func (s *MirrorSource) Fetch(ctx context.Context, u *url.URL, sink Sink) error {
	if u.Scheme != mirrorScheme {
		return fmt.Errorf("%s: not a file of the mirror %s", u.Redacted(), s.Mirror.Location())
	}
	if u.Opaque == "hashed" && s.Hashed != nil {
		return s.Hashed.Fetch(ctx, u, sink)
	}
	q := u.Query()
	p, err := addrs.ParseProvider(q.Get("provider"))
	if err != nil {
		return err
	}
	v, err := addrs.ParseVersion(q.Get("version"))
	if err != nil {
		return err
	}
	switch u.Opaque {
	case "sums", "signature":
		rec, err := s.record(ctx, p, v)
		if err != nil {
			return err
		}
		data := rec.Sums
		if u.Opaque == "signature" {
			data = rec.Signature
		}
		_, err = sink.Write(data)
		return err
	case "archive":
		plat, err := addrs.ParsePlatform(q.Get("platform"))
		if err != nil {
			return err
		}
		body, err := s.Mirror.OpenArchive(ctx, p, v, plat)
		if err != nil {
			return fmt.Errorf("%s: %s %s %s: %w", s.Mirror.Location(), p, v, plat, err)
		}
		defer body.Close()
		if err := CopyArchive(sink, body); err != nil {
			return fmt.Errorf("%s: %s %s %s: %w", s.Mirror.Location(), p, v, plat, err)
		}
		return nil
	}
	return fmt.Errorf("%s: not a file of the mirror %s", u.Redacted(), s.Mirror.Location())
}

// record reads a release's kept record once.
func (s *MirrorSource) record(ctx context.Context, p addrs.Provider, v addrs.Version) (*layout.Record, error) {
	key := p.String() + " " + v.String()
	s.mu.Lock()
	rec, ok := s.records[key]
	s.mu.Unlock()
	if ok {
		return rec, nil
	}
	r, err := s.Mirror.ReadRecord(ctx, p, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: the mirror keeps no provenance of the release's origin, so nothing can verify it: %w", s.Mirror.Location(), p, v, err)
	}
	s.mu.Lock()
	if s.records == nil {
		s.records = map[string]*layout.Record{}
	}
	s.records[key] = &r
	s.mu.Unlock()
	return &r, nil
}
