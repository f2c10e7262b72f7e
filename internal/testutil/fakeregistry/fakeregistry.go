// Package fakeregistry is a fake provider registry for tests.
//
// It owns an HTTPS server (certificates from testca) that speaks the
// OpenTofu provider registry protocol v1: service discovery, version
// listings, download documents, and the release files they point to
// (deterministic zip archives, SHA256SUMS and its detached OpenPGP signature
// made with a throwaway key). It also owns the faults a test can switch on:
// wrong content (archive, signature, checksum, signing key, filename),
// hostile releases (zip bombs), and misbehaving transport (error statuses,
// rate limits, resets, truncated or stalled bodies, redirect loops, endless
// documents), and hostile origins (tokens lured to plain http, other
// hosts or other ports; presigned and plain-http download URLs; bodies
// that drip or never end; announced package sizes). It counts requests and
// bytes served, and logs each request's scheme, host and Authorization
// header, so tests can tell what a client did. It also serves modules
// (module registry protocol v1, modules.v1): version listings and
// download endpoints that give the location a test set, or, as a hostile
// registry, any module with an archive a test's function makes
// (GenerateModules, modules.go). Only tests import it.
package fakeregistry

import (
	"bytes"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// Registry is a running fake provider registry.
type Registry struct {
	URL         string // "https://127.0.0.1:PORT" (no trailing slash)
	ServicesURL string // URL + "/v1/providers/"  (value for a `host` block's providers.v1)
	ModulesURL  string // URL + "/v1/modules/"  (value for a `host` block's modules.v1)
	KeyID       string // 16 uppercase hex chars of the signing key
	ArmoredKey  string // ASCII-armored public key

	// A second valid key of this registry. SignWithAdvertisedKey makes a
	// version advertise it and sign with it; BadSignature signs with it
	// while the registry key is advertised.
	OtherKeyID      string // 16 uppercase hex chars
	OtherArmoredKey string // ASCII-armored public key

	t      testing.TB
	signer *openpgp.Entity
	other  *openpgp.Entity
	done   chan struct{} // closed when the test ends; wakes sleeping handlers

	plainOnce sync.Once
	plainURL  string // PlainURL, once started

	mu        sync.Mutex
	providers map[string]*provider                  // by "namespace/type"
	modules   map[string]*modulePackage             // by "namespace/name/system" (modules.go)
	files     map[string][]byte                     // by URL path (AddFile)
	generate  func(module string) map[string]string // GenerateModules
	faults    faults
	requests  []string
	log       []Request
	counts    map[string]int    // requests by URL path
	served    map[string]int64  // body bytes written by URL path
	archived  int64             // body bytes written to archive responses
	onBytes   func(total int64) // called with archived after each archive chunk
	sigs      map[string][]byte // signatures made while serving, by signer and document

	noRanges      bool // archives ignore Range requests
	rangeRequests int  // archive requests answered with 206
}

// Options change what AddWithOptions publishes.
type Options struct {
	DirEntries bool     // zip also has explicit directory entries ("docs/", "docs/README.md")
	Unsigned   bool     // download docs advertise no signing keys (signing_keys.gpg_public_keys = [])
	Protocols  []string // default ["5.0"]
}

// provider is one namespace/type and its versions in the order added.
type provider struct {
	namespace, typ string
	versions       []*version
	warnings       []string // the versions list's "warnings" (SetWarnings)
}

// version is one published version of a provider.
type version struct {
	name      string
	protocols []string
	unsigned  bool
	archives  map[string][]byte // by platform, e.g. "linux_amd64"
	sums      []byte            // SHA256SUMS document
	sig       []byte            // detached signature of sums by the registry key, or by keys (SignWith)
	keys      []gpgKey          // the keys advertised instead of the registry key (SignWith)
}

// faults holds the faults switched on: content faults keyed by packageKey
// or versionKey, transport faults keyed by URL path.
type faults struct {
	tampered map[string]bool
	badSig   map[string]bool
	mismatch map[string]bool
	otherKey map[string]bool   // SignWithAdvertisedKey, by versionKey
	filename map[string]string // PathTraversalFilename, by packageKey

	queued       map[string][]*pathFault // counted faults by path, applied in order
	standing     map[string]pathFault    // RedirectLoop / EndlessJSON / Redirect by path
	archiveDelay time.Duration           // SetArchiveDelay

	serviceURL string            // SetServiceURL
	plain      map[string]bool   // PlainHTTPDownloads, by versionKey
	query      map[string]string // PresignDownloads, by versionKey
	packages   bool              // AnnouncePackages
}

// New starts a registry on an HTTPS server with a certificate from ca for
// "localhost" and "127.0.0.1". The server is closed via t.Cleanup.
// UnresolvableHost is a name the registry's certificate is also valid for,
// but which no resolver knows (".test" is reserved). A client can reach the
// registry under this name only through a proxy that connects it to the
// registry's address, which makes proxy support testable.
const UnresolvableHost = "origin.test"

// UnresolvableSubdomain is a subdomain of UnresolvableHost that the
// registry's certificate is also valid for: where a redirect can lure a
// client that follows Go's rule for credentials (kept for subdomains).
const UnresolvableSubdomain = "evil." + UnresolvableHost

// SetRangeSupport turns answers to Range requests on archives on (the
// default) or off (the whole archive is sent with 200, as some servers do).
func (r *Registry) SetRangeSupport(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noRanges = !on
}

// RangeRequests counts archive requests answered with 206.
func (r *Registry) RangeRequests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rangeRequests
}

func New(t testing.TB, ca *testca.CA) *Registry {
	t.Helper()
	signer, other := newEntities(t)
	r := &Registry{
		t:               t,
		signer:          signer,
		other:           other,
		KeyID:           keyID(signer),
		ArmoredKey:      armoredKey(t, signer),
		OtherKeyID:      keyID(other),
		OtherArmoredKey: armoredKey(t, other),
		done:            make(chan struct{}),
		providers:       map[string]*provider{},
		modules:         map[string]*modulePackage{},
		faults:          newFaults(),
		counts:          map[string]int{},
		served:          map[string]int64{},
		sigs:            map[string][]byte{},
	}
	r.URL = r.start(t, ca)
	r.ServicesURL = r.URL + "/v1/providers/"
	r.ModulesURL = r.URL + modulesPrefix
	return r
}

// Add publishes provider namespace/type at version for the given platforms
// ("linux_amd64", ...). Archives are deterministic zips containing one file
// "terraform-provider-<type>_v<version>" (mode 0755) whose content names
// provider, version and platform, so every archive differs.
//
// Adding platforms to a version that already exists keeps its other
// platforms and rebuilds its SHA256SUMS and signature.
func (r *Registry) Add(namespace, typ, version string, platforms ...string) {
	r.AddWithOptions(namespace, typ, version, Options{}, platforms...)
}

// AddWithOptions is like Add with options. Protocols and Unsigned apply to
// the whole version, and the latest call for a version sets them;
// DirEntries applies to the archives built by this call.
func (r *Registry) AddWithOptions(namespace, typ, ver string, opts Options, platforms ...string) {
	r.t.Helper()
	archives := map[string][]byte{}
	for _, p := range platforms {
		archives[p] = buildArchive(r.t, namespace, typ, ver, p, opts.DirEntries)
	}
	r.publish(namespace, typ, ver, opts, archives)
}

// AddArchives publishes the given archives (zip bytes by platform, such
// as goprovider builds) as provider namespace/type at version, signed and
// listed in SHA256SUMS like Add's; other platforms of the version stay.
func (r *Registry) AddArchives(namespace, typ, version string, archives map[string][]byte) {
	r.t.Helper()
	own := make(map[string][]byte, len(archives))
	for p, zip := range archives {
		own[p] = bytes.Clone(zip)
	}
	r.publish(namespace, typ, version, Options{}, own)
}

// publish adds archives (by platform) to a version, then rebuilds its
// SHA256SUMS and signature.
func (r *Registry) publish(namespace, typ, ver string, opts Options, archives map[string][]byte) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.version(namespace, typ, ver, true)
	v.protocols = protocolsOrDefault(opts.Protocols)
	v.unsigned = opts.Unsigned
	for p, zip := range archives {
		v.archives[p] = zip
	}
	v.sums = shasums(typ, ver, v.archives)
	sig, err := sign(r.signer, v.sums)
	if err != nil {
		r.t.Fatalf("fakeregistry: sign SHA256SUMS: %v", err)
	}
	v.sig, v.keys = sig, nil
}

// Archive returns the exact zip bytes served for that package when no
// fault is switched on (the bytes SHA256SUMS describes), or nil if the
// package is unknown.
func (r *Registry) Archive(namespace, typ, version, platform string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.version(namespace, typ, version, false)
	if v == nil {
		return nil
	}
	return bytes.Clone(v.archives[platform])
}

// SHA256SUMS returns the exact SHA256SUMS document of a version, or nil if
// the version is unknown.
func (r *Registry) SHA256SUMS(namespace, typ, version string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.version(namespace, typ, version, false)
	if v == nil {
		return nil
	}
	return bytes.Clone(v.sums)
}

// TamperArchive makes later requests for that package's archive get the
// zip with one byte in the middle flipped. SHA256SUMS and shasum keep
// describing the original.
func (r *Registry) TamperArchive(namespace, typ, version, platform string) {
	r.setFault(func(f *faults) map[string]bool { return f.tampered }, packageKey(namespace, typ, version, platform))
}

// BadSignature makes later requests for the version's SHA256SUMS.sig get a
// signature made by a key the download documents do not advertise (the
// other key; or the registry key if SignWithAdvertisedKey is also on), so
// verifying it with the advertised key fails. The download documents are
// unchanged.
func (r *Registry) BadSignature(namespace, typ, version string) {
	r.setFault(func(f *faults) map[string]bool { return f.badSig }, versionKey(namespace, typ, version))
}

// ShasumMismatch makes later download documents for that package carry a
// `shasum` that differs from the one in SHA256SUMS.
func (r *Registry) ShasumMismatch(namespace, typ, version, platform string) {
	r.setFault(func(f *faults) map[string]bool { return f.mismatch }, packageKey(namespace, typ, version, platform))
}

// SetWarnings makes the versions list of provider namespace/type, which
// must have been added, carry warnings (the top-level "warnings" both
// clients print: a deprecation, say); none removes them.
func (r *Registry) SetWarnings(namespace, typ string, warnings ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.providers[namespace+"/"+typ]
	if p == nil {
		r.t.Fatalf("fakeregistry: SetWarnings of %s/%s, which was never added", namespace, typ)
	}
	p.warnings = warnings
}

// Reset clears all faults, including SetArchiveDelay. It keeps the
// published providers, the request log, the counters and the OnBytes hook.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = newFaults()
}

// Requests returns "METHOD /path" of every request served so far, in order.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// setFault sets key in the fault set that set picks. It picks under the
// lock, since Reset replaces the sets.
func (r *Registry) setFault(set func(*faults) map[string]bool, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set(&r.faults)[key] = true
}

// version finds a version, creating it (and its provider) if create is set.
// The caller holds r.mu.
func (r *Registry) version(namespace, typ, name string, create bool) *version {
	p := r.providers[namespace+"/"+typ]
	if p == nil {
		if !create {
			return nil
		}
		p = &provider{namespace: namespace, typ: typ}
		r.providers[namespace+"/"+typ] = p
	}
	for _, v := range p.versions {
		if v.name == name {
			return v
		}
	}
	if !create {
		return nil
	}
	v := &version{name: name, archives: map[string][]byte{}}
	p.versions = append(p.versions, v)
	return v
}

// platforms returns the version's platforms in sorted order.
func (v *version) platforms() []string {
	var ps []string
	for p := range v.archives {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

func newFaults() faults {
	return faults{
		tampered: map[string]bool{},
		badSig:   map[string]bool{},
		mismatch: map[string]bool{},
		otherKey: map[string]bool{},
		filename: map[string]string{},
		queued:   map[string][]*pathFault{},
		standing: map[string]pathFault{},
		plain:    map[string]bool{},
		query:    map[string]string{},
	}
}

func versionKey(namespace, typ, version string) string {
	return namespace + "/" + typ + "/" + version
}

func packageKey(namespace, typ, version, platform string) string {
	return versionKey(namespace, typ, version) + "/" + platform
}

func protocolsOrDefault(protocols []string) []string {
	if len(protocols) == 0 {
		return []string{"5.0"}
	}
	return append([]string(nil), protocols...)
}
