package ocistore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/syncx"
	"github.com/tfmirror/tfmirror/layout"
)

// URI schemes of the destinations New opens.
const (
	SchemeRegistry = "oci://"
	SchemeLayout   = "oci-layout://"
)

// Store is an OCI destination: the repositories of a registry that a
// repository template names, or OCI image layouts in a directory. It is
// safe for concurrent use.
type Store struct {
	location string
	cfg      Config
	env      environ.Env

	tmpl *repoTemplate // oci://
	dir  string        // oci-layout://

	http      *http.Client
	userAgent string

	// tags serializes the pushes of each "repository:tag" within the
	// process.
	tags syncx.KeyedMutex

	mu      sync.Mutex
	clients map[string]*registryClient // by registry host
	targets map[string]target          // by repository
	owners  map[string]fmt.Stringer    // repository -> the provider or module package it holds
	// ahead holds the blobs PushArchiveAhead put into a repository
	// ("repository@digest"), until the push that names them takes them
	// without asking the registry again.
	ahead map[string]bool
	// untagged holds the "repository:tag" PushArchiveAhead found
	// missing, until the version's push: its other archives do not ask
	// again.
	untagged map[string]bool
	// misfit is the first error of the template for a provider (an
	// ErrTemplate): every push after it fails.
	misfit error
	// layoutFault, set by tests alone (export_test.go), is asked before
	// each write into an image layout and fails the write with the error
	// it returns, as if the process had died there.
	layoutFault func(what string) error
}

// registryClient is the auth client of one registry host, shared by its
// repositories: one token cache (tokens are cached per scope, so each
// repository gets its own pull/push token), one credential source.
type registryClient struct {
	auth  *auth.Client
	creds *credentialSource
}

// IsURI reports whether ref names an OCI destination.
func IsURI(ref string) bool {
	return strings.HasPrefix(ref, SchemeRegistry) || strings.HasPrefix(ref, SchemeLayout)
}

// New opens an OCI destination:
//   - "oci://TEMPLATE", where TEMPLATE is exactly OpenTofu's
//     repository_template (see repoTemplate for what is accepted), e.g.
//     "registry.example.com/tf/${hostname}/${namespace}/${type}";
//   - "oci-layout://DIR": an OCI image layout for each provider in
//     DIR/<hostname>/<namespace>/<type> (created when first pushed to),
//     so that skopeo reads oci:DIR/<hostname>/<namespace>/<type>:TAG and
//     oras --oci-layout DIR/<hostname>/<namespace>/<type>:TAG.
//
// Nothing is contacted or created until it is needed.
func New(_ context.Context, ref string, cfg Config) (*Store, error) {
	s := &Store{
		cfg:       cfg,
		env:       environ.Parse(cfg.Environ),
		clients:   map[string]*registryClient{},
		targets:   map[string]target{},
		owners:    map[string]fmt.Stringer{},
		ahead:     map[string]bool{},
		untagged:  map[string]bool{},
		userAgent: cfg.UserAgent,
	}
	if s.userAgent == "" {
		s.userAgent = "tfmirror"
	}
	switch {
	case strings.HasPrefix(ref, SchemeRegistry):
		raw := strings.TrimPrefix(ref, SchemeRegistry)
		t, err := parseTemplate(raw)
		if err != nil {
			return nil, err
		}
		s.tmpl = t
		s.location = SchemeRegistry + raw
		if s.http, err = newHTTPClient(cfg, s.env); err != nil {
			return nil, err
		}
	case strings.HasPrefix(ref, SchemeLayout):
		dir := strings.TrimPrefix(ref, SchemeLayout)
		if dir == "" {
			return nil, fmt.Errorf("invalid OCI layout destination %q: no directory (oci-layout://DIR)", ref)
		}
		s.dir = filepath.Clean(dir)
		s.location = SchemeLayout + dir
	default:
		return nil, fmt.Errorf("invalid OCI destination %q: want oci://REPOSITORY_TEMPLATE or oci-layout://DIR", ref)
	}
	return s, nil
}

// Location names the destination in messages: the URI it was opened with.
// It never holds a secret.
func (s *Store) Location() string { return s.location }

// IsLayout reports whether the destination is an OCI image layout.
func (s *Store) IsLayout() bool { return s.tmpl == nil }

// Repository returns the repository holding a provider: "host/path" in a
// registry, as the template gives it for the provider (exactly the
// repository OpenTofu's oci_mirror reads), or the layout's directory. An
// address the template turns into an invalid repository name, or into the
// repository of another provider, is an error naming both, wrapping
// ErrTemplate.
//
// Such an error also makes every later Push of the Store fail with it: a
// template that does not fit every provider a caller names publishes none
// of them, so a caller that names each provider (Repository, Release,
// Versions) before it pushes, as a build does while it plans, leaves no
// repository holding half of what was asked.
func (s *Store) Repository(p addrs.Provider) (string, error) {
	name, _, _, err := s.repository(p)
	return name, err
}

// repository returns the repository's name, its registry host and path
// (for a registry), and records which provider it holds.
func (s *Store) repository(p addrs.Provider) (name, host, path string, err error) {
	name, host, path, err = s.locate(p.Hostname.String(), p.Namespace, p.Type)
	if err != nil {
		return "", "", "", s.misfits(fmt.Errorf("provider %s: %w", p, err))
	}
	if err := s.claim(name, p); err != nil {
		return "", "", "", s.misfits(err)
	}
	return name, host, path, nil
}

// locate returns the repository the template gives for the values of
// ${hostname}, ${namespace} and ${type} (its name, and its registry host
// and path), or the layout's directory for them.
func (s *Store) locate(hostname, namespace, typ string) (name, host, path string, err error) {
	if s.tmpl == nil {
		// The address parts are valid path components: addrs refuses
		// anything else.
		return filepath.Join(s.dir, hostname, namespace, typ), "", "", nil
	}
	rendered := s.tmpl.renderParts(hostname, namespace, typ)
	host, path, err = splitRepository(rendered)
	if err != nil {
		return "", "", "", fmt.Errorf("the repository template %q gives %q, which is not a valid OCI repository address "+
			"(lowercase letters, digits and the separators . _ - / only): %w", s.tmpl.raw, rendered, err)
	}
	return host + "/" + path, host, path, nil
}

// claim records that the repository name holds who (an addrs.Provider or
// an addrs.Module), and refuses it when it holds another.
func (s *Store) claim(name string, who fmt.Stringer) error {
	s.mu.Lock()
	other, taken := s.owners[name]
	if !taken {
		s.owners[name] = who
	}
	s.mu.Unlock()
	if !taken || other == who {
		return nil
	}
	_, otherIsProvider := other.(addrs.Provider)
	_, whoIsProvider := who.(addrs.Provider)
	if otherIsProvider && whoIsProvider {
		return fmt.Errorf("the repository template %q gives the same repository %s for %s and %s: "+
			"use ${hostname}, ${namespace} and ${type} so that each provider has its own", s.templateText(), name, other, who)
	}
	return fmt.Errorf("the repository template %q gives the same repository %s for %s and %s: "+
		"use ${hostname}, ${namespace} and ${type} so that each provider and module package has its own",
		s.templateText(), name, ownerName(other), ownerName(who))
}

// ownerName names what a repository holds in a message.
func ownerName(who fmt.Stringer) string {
	if _, ok := who.(addrs.Module); ok {
		return "module " + who.String()
	}
	return "provider " + who.String()
}

// misfits records err, an error of the template for a provider, as the
// reason to refuse every later push, and returns it as an ErrTemplate.
func (s *Store) misfits(err error) error {
	err = templateError{err}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.misfit == nil {
		s.misfit = err
	}
	return err
}

// misfitFor returns the error that refuses pushes of what (a provider,
// or "module ADDRESS") because the template did not fit a provider, or
// nil.
func (s *Store) misfitFor(what string, v addrs.Version) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.misfit == nil {
		return nil
	}
	return fmt.Errorf("push %s %s: nothing is pushed through a repository template that does not fit every provider: %w", what, v, s.misfit)
}

func (s *Store) templateText() string {
	if s.tmpl == nil {
		return "${hostname}/${namespace}/${type}"
	}
	return s.tmpl.raw
}

// open returns the repository of p.
func (s *Store) open(p addrs.Provider) (target, string, error) {
	name, host, path, err := s.repository(p)
	if err != nil {
		return nil, "", err
	}
	t, err := s.target("provider "+p.String(), name, host, path)
	if err != nil {
		return nil, "", err
	}
	return t, name, nil
}

// target returns the repository name (in a registry: host and path) as
// locate gave it; who names what it holds, for an error.
func (s *Store) target(who, name, host, path string) (target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.targets[name]; ok {
		return t, nil
	}
	var t target
	if s.tmpl == nil {
		t = &layoutTarget{root: name, fault: s.layoutFault}
	} else {
		client, err := s.clientLocked(host)
		if err != nil {
			return nil, err
		}
		repo, err := remote.NewRepository(host + "/" + path)
		if err != nil {
			return nil, fmt.Errorf("%s: repository %s: %w", who, name, err)
		}
		repo.Client = client.auth
		// A registry without the referrers API keeps referrers in a
		// "sha256-<hex>" tag; replaced referrer indexes are left for the
		// registry's garbage collection rather than deleted (many
		// registries do not allow deletes).
		repo.SkipReferrersGC = true
		// A registry whose listings never end is not followed to their
		// end: oras stops after the pages, remoteTarget after the tags.
		repo.TagListMaxPages = s.maxListPages()
		repo.ReferrerListMaxPages = s.maxListPages()
		t = &remoteTarget{repo: repo, maxTags: s.maxTags(), maxPages: s.maxListPages()}
	}
	s.targets[name] = t
	return t, nil
}

// clientLocked returns the auth client of a registry host.
func (s *Store) clientLocked(host string) (*registryClient, error) {
	if c, ok := s.clients[host]; ok {
		return c, nil
	}
	creds, err := newCredentialSource(host, s.env)
	if err != nil {
		return nil, err
	}
	c := &registryClient{
		creds: creds,
		auth: &auth.Client{
			Client:     guardRealms(s.http, host, s.cfg.TokenRealms[strings.ToLower(host)]),
			Header:     http.Header{"User-Agent": {s.userAgent}},
			Cache:      auth.NewCache(),
			Credential: creds.credential,
		},
	}
	s.clients[host] = c
	return c, nil
}

// fail wraps err for an operation on p's repository, explaining what the
// registry answered.
func (s *Store) fail(op string, p addrs.Provider, version, repo string, err error) error {
	return s.explain(&Error{Op: op, Provider: p, Version: version, Repository: repo}, err)
}

// explain completes e (Op, Provider or Module, Version and Repository
// set) with err and what the registry answered, and returns it; err
// itself if it is an *Error already.
func (s *Store) explain(e *Error, err error) error {
	if errors.As(err, new(*Error)) {
		return err
	}
	repo := e.Repository
	kind := classify(err)
	// What the registry said (its error messages, a decoder's complaint
	// about its answer) is quoted bounded and escaped; the notes below
	// are the store's own.
	raw := err
	if !errors.As(err, new(*layout.ConflictError)) { // tfmirror's own lines, kept apart
		err = excerpt.Error(err)
	}
	if errors.Is(kind, ErrNoCredentials) || errors.Is(kind, ErrUnauthorized) {
		if host, ok := s.hostOf(repo); ok {
			s.mu.Lock()
			c := s.clients[host]
			s.mu.Unlock()
			switch {
			case c != nil && errors.Is(kind, ErrUnauthorized) && outOfScope(raw, host, c) && c.creds.given.Load():
				kind = ErrOutOfScope
			case c != nil && errors.Is(kind, ErrUnauthorized) && outOfScope(raw, host, c):
				// An anonymous token: the registry wants credentials.
				kind = ErrNoCredentials
				err = fmt.Errorf("%w (credentials for %s were looked for in: %s)", err, host, c.creds.describe())
			case c != nil:
				err = fmt.Errorf("%w (credentials for %s were looked for in: %s)", err, host, c.creds.describe())
			}
		}
	}
	e.Kind, e.Err = kind, err
	return e
}

// outOfScope reports a 401 from the registry itself after its token
// service accepted the credentials: oras keeps a host's Bearer scheme only
// once a token was issued, so the token does not cover the repository (a
// wrong password fails at the token service instead).
func outOfScope(err error, host string, c *registryClient) bool {
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) || resp.URL == nil || resp.URL.Host != host || c.auth.Cache == nil {
		return false
	}
	scheme, serr := c.auth.Cache.GetScheme(context.Background(), host)
	return serr == nil && scheme == auth.SchemeBearer
}

func (s *Store) hostOf(repo string) (string, bool) {
	if s.tmpl == nil {
		return "", false
	}
	host, _, ok := strings.Cut(repo, "/")
	return host, ok
}

// Ping checks that the registry holding p's repository answers and
// accepts the credentials (GET /v2/, as OpenTofu does before it reads),
// so a command can fail early. A layout needs no check.
func (s *Store) Ping(ctx context.Context, p addrs.Provider) error {
	if s.tmpl == nil {
		return nil
	}
	name, host, _, err := s.repository(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	client, err := s.clientLocked(host)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	reg, err := remote.NewRegistry(host)
	if err != nil {
		return err
	}
	reg.Client = client.auth
	if err := reg.Ping(ctx); err != nil {
		return s.fail("reach the registry of", p, "", name, err)
	}
	return nil
}

// Versions lists the versions whose tags the provider's repository holds:
// tags that are the canonical tag of a version (VersionOfTag), sorted. A
// repository that does not exist or holds no version is an error wrapping
// layout.ErrNotInMirror, as for a tree.
func (s *Store) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	t, name, err := s.open(p)
	if err != nil {
		return nil, fmt.Errorf("list the versions of %s: %w", p, err)
	}
	tags, err := t.Tags(ctx)
	if isNotFound(err) {
		return nil, s.fail("list the versions of", p, "", name, fmt.Errorf("%w: %w", layout.ErrNotInMirror, err))
	}
	if err != nil {
		return nil, s.fail("list the versions of", p, "", name, err)
	}
	var out addrs.VersionList
	for _, tag := range tags {
		if v, ok := VersionOfTag(tag); ok {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, s.fail("list the versions of", p, "", name, fmt.Errorf("%w: no tag is a version", layout.ErrNotInMirror))
	}
	out.Sort()
	return out, nil
}

// Release is what a repository holds for a version.
type Release struct {
	Provider   addrs.Provider
	Version    addrs.Version
	Repository string
	Tag        string
	// Index is the digest of the image index under the tag.
	Index string
	// Archives are the platforms' packages, sorted by platform.
	Archives []Archive
}

// Archive is one platform's package in a registry.
type Archive struct {
	Platform addrs.Platform
	// Digest is the layer's digest, "sha256:<hex>"; ZH is the same as the
	// package's zh: hash.
	Digest string
	ZH     hashing.Hash
	Size   int64
	// Manifest is the digest of the platform's image manifest.
	Manifest string
	// Filename is the layer's org.opencontainers.image.title, "" if none.
	Filename string
}

// Archive returns the package of a platform, if the release has it.
func (r Release) Archive(plat addrs.Platform) (Archive, bool) {
	for _, a := range r.Archives {
		if a.Platform == plat {
			return a, true
		}
	}
	return Archive{}, false
}

// Release describes what the repository holds under the version's tag,
// read as OpenTofu reads it: per platform the package's digest and size.
// found is false when the tag does not exist. A tag that holds something
// OpenTofu cannot install from is an error wrapping ErrNotProvider.
func (s *Store) Release(ctx context.Context, p addrs.Provider, v addrs.Version) (Release, bool, error) {
	t, name, err := s.open(p)
	if err != nil {
		return Release{}, false, fmt.Errorf("read %s %s: %w", p, v, err)
	}
	tag := Tag(v)
	desc, data, err := t.FetchIndex(ctx, tag)
	if isNotFound(err) {
		return Release{}, false, nil
	}
	if err != nil {
		return Release{}, false, s.fail("read", p, v.String(), name, err)
	}
	rel, err := readRelease(ctx, t, desc, data)
	if err != nil {
		return Release{}, false, s.fail("read", p, v.String(), name+":"+tag, err)
	}
	rel.Provider, rel.Version, rel.Repository, rel.Tag = p, v, name, tag
	return rel, true, nil
}

// shapeError marks an error about what a tag holds.
func shapeError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotProvider, fmt.Sprintf(format, args...))
}

// readRelease reads the platforms' manifests of the index desc names
// (data, as FetchIndex read it).
func readRelease(ctx context.Context, t target, desc ocispec.Descriptor, data []byte) (Release, error) {
	entries, err := decodeTargets(desc, data)
	if err != nil {
		return Release{}, err
	}
	rel := Release{Index: desc.Digest.String()}
	for _, plat := range slices.SortedFunc(maps.Keys(entries), func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) }) {
		a, err := readArchive(ctx, t, plat, entries[plat])
		if err != nil {
			return Release{}, err
		}
		rel.Archives = append(rel.Archives, a)
	}
	return rel, nil
}

// decodeTargets decodes the index desc names (data, as FetchIndex read
// it): the entry of each platform's manifest, as OpenTofu selects them.
func decodeTargets(desc ocispec.Descriptor, data []byte) (map[addrs.Platform]ocispec.Descriptor, error) {
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, shapeError("the tag names a %s, not an image index", excerpt.Quote(desc.MediaType))
	}
	idx, err := decodeIndex(data)
	if err != nil {
		return nil, shapeError("%v", err)
	}
	entries := map[addrs.Platform]ocispec.Descriptor{}
	for _, entry := range idx.Manifests {
		plat, ok := targetPlatform(entry)
		if !ok {
			continue // OpenTofu ignores it too
		}
		if _, seen := entries[plat]; seen {
			return nil, shapeError("the index lists %s twice (OpenTofu refuses an ambiguous index)", plat)
		}
		entries[plat] = entry
	}
	if len(entries) == 0 {
		return nil, shapeError("the index lists no %s manifest with a platform", ArtifactTypeProviderTarget)
	}
	return entries, nil
}

// readArchive reads a platform's manifest, the index entry names, for
// its package.
func readArchive(ctx context.Context, t target, plat addrs.Platform, entry ocispec.Descriptor) (Archive, error) {
	data, err := fetchManifest(ctx, t, entry)
	if err != nil {
		return Archive{}, fmt.Errorf("%s: %w", plat, err)
	}
	layer, err := zipLayer(data)
	if err != nil {
		return Archive{}, shapeError("%s: %v", plat, err)
	}
	return Archive{
		Platform: plat,
		Digest:   layer.Digest.String(),
		ZH:       zhOf(layer.Digest),
		Size:     layer.Size,
		Manifest: entry.Digest.String(),
		Filename: layer.Annotations[ocispec.AnnotationTitle],
	}, nil
}

// OpenArchive streams a platform's package from the repository. Reading
// fails, instead of ending, if the bytes are not the layer's size and
// digest. A missing tag, platform or package is an error wrapping
// fs.ErrNotExist. Only the platform's own manifest is read, as OpenTofu
// reads it.
func (s *Store) OpenArchive(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (io.ReadCloser, error) {
	tagged, err := s.readTagged(ctx, p, v)
	if err != nil {
		return nil, err
	}
	entry, ok := tagged.entries[plat]
	if !ok {
		return nil, s.fail("read", p, v.String(), tagged.ref, fmt.Errorf("no package for %s: %w", plat, fs.ErrNotExist))
	}
	a, err := readArchive(ctx, tagged.t, plat, entry)
	if err != nil {
		return nil, s.fail("read", p, v.String(), tagged.ref, err)
	}
	return s.openLayer(ctx, tagged, a)
}

// taggedRelease is the index under a version's tag, as OpenTofu selects
// its entries: the platforms' manifests, not yet read.
type taggedRelease struct {
	p       addrs.Provider
	v       addrs.Version
	t       target
	name    string // the repository
	ref     string // repository:tag
	entries map[addrs.Platform]ocispec.Descriptor
}

// readTagged reads the index under v's tag in p's repository. A missing tag
// is an error wrapping fs.ErrNotExist; one that holds something OpenTofu
// cannot install from, an error wrapping ErrNotProvider.
func (s *Store) readTagged(ctx context.Context, p addrs.Provider, v addrs.Version) (taggedRelease, error) {
	t, name, err := s.open(p)
	if err != nil {
		return taggedRelease{}, fmt.Errorf("read %s %s: %w", p, v, err)
	}
	tag := Tag(v)
	desc, data, err := t.FetchIndex(ctx, tag)
	if isNotFound(err) {
		return taggedRelease{}, s.fail("read", p, v.String(), name, fmt.Errorf("no tag %s: %w", tag, fs.ErrNotExist))
	}
	if err != nil {
		return taggedRelease{}, s.fail("read", p, v.String(), name, err)
	}
	ref := name + ":" + tag
	entries, err := decodeTargets(desc, data)
	if err != nil {
		return taggedRelease{}, s.fail("read", p, v.String(), ref, err)
	}
	return taggedRelease{p: p, v: v, t: t, name: name, ref: ref, entries: entries}, nil
}

// openLayer streams the package a of the release, checked against its
// layer's size and digest as it is read.
func (s *Store) openLayer(ctx context.Context, r taggedRelease, a Archive) (io.ReadCloser, error) {
	layer := ocispec.Descriptor{MediaType: MediaTypeZip, Digest: digest.Digest(a.Digest), Size: a.Size}
	rc, err := r.t.Fetch(ctx, layer)
	if isNotFound(err) {
		err = fmt.Errorf("the index lists it, but the repository does not hold it: %w", fs.ErrNotExist)
	}
	if err != nil {
		return nil, s.fail("read", r.p, r.v.String(), r.name, fmt.Errorf("%s package %s: %w", a.Platform, a.Digest, err))
	}
	return &verifyingReader{rc: rc, h: sha256.New(), want: layer, what: fmt.Sprintf("%s %s %s package in %s", r.p, r.v, a.Platform, r.name)}, nil
}

// ErrDigestMismatch means content read from a repository is not what its
// descriptor says.
var ErrDigestMismatch = errors.New("content does not match its digest")

// verifyingReader checks a blob's size and digest as it is read: the
// read that would end it returns an error instead of io.EOF when they
// differ.
type verifyingReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	n    int64
	want ocispec.Descriptor
	what string
	err  error
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.rc.Read(p)
	r.n += int64(n)
	r.h.Write(p[:n])
	if r.n > r.want.Size {
		r.err = fmt.Errorf("%s: more than the %d bytes of %s: %w", r.what, r.want.Size, r.want.Digest, ErrDigestMismatch)
		return n, r.err
	}
	if errors.Is(err, io.EOF) {
		got := digest.NewDigestFromBytes(digest.SHA256, r.h.Sum(nil))
		switch {
		case r.n != r.want.Size:
			r.err = fmt.Errorf("%s: %d bytes, want %d: %w", r.what, r.n, r.want.Size, io.ErrUnexpectedEOF)
			return n, r.err
		case got != r.want.Digest:
			r.err = fmt.Errorf("%s: read %s, want %s: %w", r.what, got, r.want.Digest, ErrDigestMismatch)
			return n, r.err
		}
	}
	return n, err
}

func (r *verifyingReader) Close() error { return r.rc.Close() }

// ReadRecord returns the release's record kept in the registry: the
// provenance artifact referring to the version's index, with the upstream
// SHA256SUMS, its signature and the provenance (signing keys, h1 and zh
// hashes per platform). A version without one is an error wrapping
// fs.ErrNotExist, as for a tree. The record is returned as kept; whether
// it is trusted is the caller's decision.
func (s *Store) ReadRecord(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error) {
	t, name, err := s.open(p)
	if err != nil {
		return layout.Record{}, fmt.Errorf("read the provenance of %s %s: %w", p, v, err)
	}
	tag := Tag(v)
	desc, err := t.Resolve(ctx, tag)
	if isNotFound(err) {
		return layout.Record{}, s.fail("read the provenance of", p, v.String(), name, fmt.Errorf("no tag %s: %w", tag, fs.ErrNotExist))
	}
	if err != nil {
		return layout.Record{}, s.fail("read the provenance of", p, v.String(), name, err)
	}
	return s.recordOf(ctx, t, p, v, name+":"+tag, desc)
}

// RecordOf is ReadRecord of the index rel names (a Release as Release
// returned it), without resolving the tag again: the record of exactly
// the packages rel lists, even if the tag has moved since.
func (s *Store) RecordOf(ctx context.Context, rel Release) (layout.Record, error) {
	t, _, err := s.open(rel.Provider)
	if err != nil {
		return layout.Record{}, fmt.Errorf("read the provenance of %s %s: %w", rel.Provider, rel.Version, err)
	}
	index := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.Digest(rel.Index)}
	return s.recordOf(ctx, t, rel.Provider, rel.Version, rel.Repository+":"+rel.Tag, index)
}

// recordOf reads the record referring to index, the index under the tag
// ref names.
func (s *Store) recordOf(ctx context.Context, t target, p addrs.Provider, v addrs.Version, ref string, index ocispec.Descriptor) (layout.Record, error) {
	kept, err := readRecord(ctx, t, index)
	if err != nil {
		return layout.Record{}, s.fail("read the provenance of", p, v.String(), ref, err)
	}
	if kept == nil {
		return layout.Record{}, s.fail("read the provenance of", p, v.String(), ref,
			fmt.Errorf("no %s artifact refers to the index %s: %w", ArtifactTypeProvenance, index.Digest, fs.ErrNotExist))
	}
	return kept.Record, nil
}

// keptRecord is a provenance artifact as read: the record, and the
// descriptor of the artifact's manifest.
type keptRecord struct {
	layout.Record
	manifest ocispec.Descriptor
}

// readRecord reads the provenance artifact referring to index; nil if
// there is none.
func readRecord(ctx context.Context, t target, index ocispec.Descriptor) (*keptRecord, error) {
	refs, err := t.Referrers(ctx, index, ArtifactTypeProvenance)
	if err != nil {
		return nil, fmt.Errorf("list the referrers of %s: %w", index.Digest, err)
	}
	switch len(refs) {
	case 0:
		return nil, nil
	case 1:
	default:
		var ds []string
		for _, r := range refs {
			ds = append(ds, r.Digest.String())
		}
		slices.Sort(ds)
		return nil, fmt.Errorf("%d provenance artifacts refer to the index %s (%s); expected one", len(refs), index.Digest, strings.Join(ds, ", "))
	}
	data, err := fetchManifest(ctx, t, refs[0])
	if err != nil {
		return nil, err
	}
	sums, sig, prov, err := decodeProvenanceManifest(data)
	if err != nil {
		return nil, err
	}
	read := func(d ocispec.Descriptor, limit int64) ([]byte, error) {
		if d.Size > limit || d.Size < 0 {
			return nil, fmt.Errorf("%s layer %s has %d bytes, more than %d", d.MediaType, d.Digest, d.Size, limit)
		}
		return fetchAll(ctx, t, d)
	}
	kept := &keptRecord{manifest: refs[0]}
	if kept.Sums, err = read(sums, layout.MaxSumsBytes); err != nil {
		return nil, err
	}
	if sig.Digest != "" {
		if kept.Signature, err = read(sig, layout.MaxSumsBytes); err != nil {
			return nil, err
		}
	}
	provData, err := read(prov, layout.MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	if kept.Provenance, err = layout.DecodeProvenance(provData); err != nil {
		return nil, err
	}
	return kept, nil
}

// Name is where a version lives, repository:tag, for messages; the
// template itself when the repository cannot be named.
func (s *Store) Name(p addrs.Provider, v addrs.Version) string {
	repo, err := s.Repository(p)
	if err != nil {
		return s.Location() + " " + p.String()
	}
	return repo + ":" + Tag(v)
}
