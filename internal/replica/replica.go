package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Dir is the directory under the tree's root that holds the replica, one
// subdirectory per origin host. tfmirror owns everything below it.
const Dir = "replica"

// ServicesPath is the providers.v1 base of host's replica, relative to the
// tree's root, with the trailing slash clients need. A client's host block
// sets "providers.v1" to the mirror's URL followed by this path.
func ServicesPath(host addrs.Hostname) string {
	return Dir + "/" + string(host) + "/v1/providers/"
}

// DiscoveryPath is the relative path of host's discovery document, for a
// web server that answers /.well-known/terraform.json for that hostname.
func DiscoveryPath(host addrs.Hostname) string {
	return Dir + "/" + string(host) + regproto.DiscoveryPath
}

// VersionsPath is the relative path of a provider's versions document.
func VersionsPath(p addrs.Provider) string {
	return ServicesPath(p.Hostname) + p.Namespace + "/" + p.Type + "/versions"
}

// DownloadPath is the relative path of a package's download document.
func DownloadPath(p addrs.Provider, v addrs.Version, plat addrs.Platform) string {
	return ServicesPath(p.Hostname) + p.Namespace + "/" + p.Type + "/" + v.String() + "/download/" + plat.OS + "/" + plat.Arch
}

// emptySignaturePath stands in for the signature of a release whose origin
// published no signing keys: clients fetch shasums_signature_url even then
// (and ignore what it holds), so it must exist. It is an empty file.
func emptySignaturePath(p addrs.Provider, v addrs.Version) string {
	return ServicesPath(p.Hostname) + p.Namespace + "/" + p.Type + "/" + v.String() + "/SHA256SUMS.sig"
}

// Report says what a replica holds.
type Report struct {
	Hosts     []addrs.Hostname // origin hosts replicated, sorted
	Providers int              // providers with a versions document
	Modules   int              // modules with a versions document
	// Services are what each host's discovery document names: service ID
	// to the path of its base from the tree's root ("/replica/...").
	Services map[addrs.Hostname]map[string]string
	Versions int // versions with at least one package
	Packages int // download documents
	// Warnings name what could not be replicated and why, when that is not
	// a verification failure (a release kept without provenance).
	Warnings []string
}

// Trust is how the replica decides which kept releases it offers: the
// build's trust decision, with its policy.
type Trust struct {
	Checker mirror.SignatureChecker
	Policy  mirror.TrustPolicy
}

// Write regenerates the replica of every provider in tree. Files are written
// atomically, download documents before the versions documents that list
// them, and files of an earlier replica that are no longer needed are
// removed last. A release whose kept files the trust decision refuses is
// left out; the returned error then holds a *mirror.VerificationError for
// each of its packages, and the rest of the replica is still written. Any
// other error stops the writing.
func Write(ctx context.Context, tree *layout.Tree, trust Trust) (*Report, error) {
	return writeReplica(ctx, tree, &trust, nil)
}

// ModuleLocator gives the location a module version's download document
// names; nil means the package in the tree (ModuleLocation).
type ModuleLocator func(m addrs.Module, v addrs.Version, rec layout.ModuleRecord) (string, error)

// WriteWith is Write with the module documents' locations from locate;
// with a nil trust it writes only the module registry, as WriteModules.
func WriteWith(ctx context.Context, tree *layout.Tree, trust *Trust, locate ModuleLocator) (*Report, error) {
	return writeReplica(ctx, tree, trust, locate)
}

// writeReplica writes the replica: every provider and module when trust is set,
// else only the modules (a build with modules and no --registry-replica),
// leaving the providers' documents as they are.
func writeReplica(ctx context.Context, tree *layout.Tree, trust *Trust, locate ModuleLocator) (*Report, error) {
	if locate == nil {
		locate = func(m addrs.Module, v addrs.Version, rec layout.ModuleRecord) (string, error) {
			return ModuleLocation(m, v, rec.Subdir), nil
		}
	}
	w := &writer{ctx: ctx, tree: tree, locate: locate, report: &Report{}, written: map[string]bool{}, started: time.Now(), services: map[addrs.Hostname]map[string]string{}}
	_, w.shared = tree.Reader().(layout.Conditional)
	if trust != nil {
		w.trust = *trust
		if err := w.providers(); err != nil {
			return nil, err
		}
	}
	if err := w.modules(); err != nil {
		return nil, err
	}
	if err := w.discovery(trust == nil); err != nil {
		return nil, err
	}
	if err := w.prune(trust == nil); err != nil {
		return nil, err
	}
	return w.report, errors.Join(w.problems...)
}

// providers writes the documents of every provider in the tree.
func (w *writer) providers() error {
	providers, err := w.tree.Providers(w.ctx)
	if err != nil {
		return fmt.Errorf("registry replica: list providers: %w", err)
	}
	slices.SortFunc(providers, func(a, b addrs.Provider) int { return strings.Compare(a.String(), b.String()) })
	for _, p := range providers {
		if string(p.Hostname) == Dir {
			return fmt.Errorf("registry replica: the mirror holds providers of a host named %q, whose directory the replica would share", Dir)
		}
	}
	for _, p := range providers {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if err := w.provider(p); err != nil {
			return fmt.Errorf("registry replica of %s: %w", p, err)
		}
		w.offer(p.Hostname, regproto.ProvidersV1, ServicesPath(p.Hostname))
	}
	return nil
}

// offer records that host's discovery document names service at rel.
func (w *writer) offer(host addrs.Hostname, service, rel string) {
	if w.services[host] == nil {
		w.services[host] = map[string]string{}
	}
	w.services[host][service] = "/" + rel
}

// discovery writes each host's discovery document. With keep, services an
// existing document names and this run did not write (the providers of a
// modules-only run) are kept.
func (w *writer) discovery(keep bool) error {
	hosts := slices.Sorted(maps.Keys(w.services))
	for _, h := range hosts {
		doc := regproto.Discovery(w.services[h])
		if keep {
			if old, err := w.tree.Reader().ReadFile(w.ctx, DiscoveryPath(h), 1<<16); err == nil {
				var prev regproto.Discovery
				if json.Unmarshal(old, &prev) == nil {
					for k, v := range prev {
						if _, ok := doc[k]; !ok && k == regproto.ProvidersV1 {
							doc[k] = v
						}
					}
				}
			}
		}
		if err := w.putJSON(DiscoveryPath(h), doc); err != nil {
			return err
		}
	}
	w.report.Hosts = hosts
	if len(hosts) > 0 {
		w.report.Services = w.services
	}
	return nil
}

type writer struct {
	services map[addrs.Hostname]map[string]string // discovery documents
	locate   ModuleLocator
	ctx      context.Context
	tree     *layout.Tree
	trust    Trust
	report   *Report
	written  map[string]bool // slash-separated paths relative to the root
	problems []error
	started  time.Time
	shared   bool // the store lets several writers write at once
}

// writtenRecently reports whether rel was written since shortly before
// the run started (or cannot be told).
func (w *writer) writtenRecently(rel string) bool {
	info, err := w.tree.Reader().Stat(w.ctx, rel)
	return err != nil || info.ModTime.After(w.started.Add(-recentWrites))
}

// provider writes the download documents of every version of p, then its
// versions document.
func (w *writer) provider(p addrs.Provider) error {
	idx, err := w.tree.ReadIndex(w.ctx, p)
	if err != nil {
		return err
	}
	var list addrs.VersionList
	for raw := range idx.Versions {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			w.warn("%s: version %q in %s is not a version; left out of the registry replica", p, raw, layout.IndexPath(p))
			continue
		}
		list = append(list, v)
	}
	list.Sort()
	doc := regproto.Versions{Versions: []regproto.Version{}}
	for _, v := range list {
		platforms, err := w.release(p, v)
		if err != nil {
			return err
		}
		if len(platforms) > 0 {
			doc.Versions = append(doc.Versions, regproto.Version{Version: v.String(), Protocols: []string{}, Platforms: platforms})
		}
	}
	if len(doc.Versions) == 0 {
		return nil
	}
	if doc.Warnings, err = w.tree.ReadWarnings(w.ctx, p); err != nil {
		return err
	}
	w.report.Providers++
	return w.putJSON(VersionsPath(p), doc)
}

// release writes the download documents of one version and returns the
// platforms written. Problems with the kept files leave the version out.
func (w *writer) release(p addrs.Provider, v addrs.Version) ([]regproto.Platform, error) {
	vdoc, err := w.tree.ReadVersion(w.ctx, p, v)
	if err != nil {
		return nil, err
	}
	var plats []addrs.Platform
	for raw := range vdoc.Archives {
		plat, err := addrs.ParsePlatform(raw)
		if err != nil {
			w.warn("%s %s: platform %q in %s is not a platform; left out of the registry replica", p, v, raw, layout.VersionPath(p, v))
			continue
		}
		plats = append(plats, plat)
	}
	if len(plats) == 0 {
		return nil, nil
	}
	slices.SortFunc(plats, func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) })

	rec, err := w.tree.ReadRecord(w.ctx, p, v)
	if errors.Is(err, fs.ErrNotExist) {
		w.warn("%s %s: the mirror keeps no SHA256SUMS or provenance for it, so it is left out of the registry replica", p, v)
		return nil, nil
	}
	if err != nil {
		w.failAll(p, v, plats, "its kept origin files cannot be read", err)
		return nil, nil
	}
	rel, ok := w.checkRelease(p, v, plats, rec)
	if !ok {
		return nil, nil
	}

	type doc struct {
		path string
		body regproto.Download
	}
	var docs []doc
	var out []regproto.Platform
	for _, plat := range plats {
		d, ok := w.download(p, v, plat, rec, rel)
		if !ok {
			continue
		}
		docs = append(docs, doc{DownloadPath(p, v, plat), d})
		out = append(out, regproto.Platform{OS: plat.OS, Arch: plat.Arch})
	}
	if len(docs) == 0 {
		return nil, nil
	}
	if pkgs := packagesField(rec, out); pkgs != nil {
		for i := range docs {
			docs[i].body.Packages = pkgs
		}
	}
	if rel.emptySignature {
		if err := w.put(emptySignaturePath(p, v), []byte{}); err != nil {
			return nil, err
		}
	}
	for _, d := range docs {
		if err := w.putJSON(d.path, d.body); err != nil {
			return nil, err
		}
	}
	w.report.Versions++
	w.report.Packages += len(docs)
	return out, nil
}

// packagesField is OpenTofu 1.12's "packages" field for a version's
// download documents: every replicated platform's h1: and zh: and size,
// from the provenance record, so a client locks every platform's hashes.
// A client that gets the field checks the requested platform's size and
// zh: against it, so it is left out (nil) unless every platform has both.
func packagesField(rec layout.Record, plats []regproto.Platform) map[string]regproto.Package {
	out := make(map[string]regproto.Package, len(plats))
	for _, p := range plats {
		key := p.OS + "_" + p.Arch
		a, ok := rec.Provenance.Archives[key]
		if !ok || a.Size <= 0 || a.ZH == "" || a.H1 == "" {
			return nil
		}
		hashes := []string{string(a.H1), string(a.ZH)}
		slices.Sort(hashes)
		out[key] = regproto.Package{Hashes: hashes, PackageSize: a.Size}
	}
	return out
}

// releaseInfo is what the download documents of one version share.
type releaseInfo struct {
	sums           hashing.Sums
	keys           []regproto.GPGKey
	emptySignature bool // the origin published no keys and no signature is kept
}

// checkRelease re-authenticates the kept SHA256SUMS, signature and keys
// with the build's trust decision, so the replica never offers what the
// build would refuse, nor what clients refuse.
func (w *writer) checkRelease(p addrs.Provider, v addrs.Version, plats []addrs.Platform, rec layout.Record) (releaseInfo, bool) {
	verdict, err := w.trust.Policy.Authenticate(w.trust.Checker, mirror.Package{Provider: p, Version: v}, mirror.KeptEvidence(rec))
	if err != nil {
		problem, cause := refusal(err, rec)
		w.failAll(p, v, plats, problem, cause)
		return releaseInfo{}, false
	}
	if verdict.HashesOnly != "" && p.Hostname != addrs.DefaultRegistryHost {
		w.failAll(p, v, plats, fmt.Sprintf("only hashes from %s vouch for the release, and OpenTofu installs unsigned packages only from %s", verdict.HashesOnly, addrs.DefaultRegistryHost.ForDisplay()), nil)
		return releaseInfo{}, false
	}
	rel := releaseInfo{sums: verdict.Sums, keys: []regproto.GPGKey{}, emptySignature: verdict.Unsigned && rec.Signature == nil}
	for i, a := range rec.Provenance.SigningKeys {
		id, err := signing.KeyID(a)
		if err != nil {
			w.failAll(p, v, plats, fmt.Sprintf("kept signing key %d cannot be read", i+1), err)
			return rel, false
		}
		rel.keys = append(rel.keys, regproto.GPGKey{KeyID: id, ASCIIArmor: a})
	}
	return rel, true
}

// refusal says why the trust decision refused a kept release.
func refusal(err error, rec layout.Record) (string, error) {
	var verr *mirror.VerificationError
	if !errors.As(err, &verr) {
		return "its kept origin files cannot be checked", err
	}
	switch {
	case verr.Evidence == mirror.EvidenceSums:
		return "the kept SHA256SUMS is malformed", verr.Err
	case verr.Evidence == mirror.EvidenceSignature && rec.Signature == nil:
		return "the origin advertised signing keys but the mirror keeps no signature of SHA256SUMS", nil
	case verr.Evidence == mirror.EvidenceSignature:
		return "the kept SHA256SUMS signature does not verify with the kept signing keys", verr.Err
	}
	return "the trust policy refuses it: " + verr.Problem, verr.Err
}

// download builds one package's download document, pointing at the files
// the network mirror holds.
func (w *writer) download(p addrs.Provider, v addrs.Version, plat addrs.Platform, rec layout.Record, rel releaseInfo) (regproto.Download, bool) {
	pkg := mirror.Package{Provider: p, Version: v, Platform: plat}
	prov, ok := rec.Provenance.Archives[plat.String()]
	if !ok {
		w.warn("%s: the mirror's provenance record does not describe this package, so it is left out of the registry replica", pkg)
		return regproto.Download{}, false
	}
	digest, ok := rel.sums[prov.Filename]
	if !ok {
		w.fail(pkg, fmt.Sprintf("the kept SHA256SUMS has no line for %s", excerpt.Quote(prov.Filename)), nil)
		return regproto.Download{}, false
	}
	if prov.ZH != "" && prov.ZH != hashing.ZH(digest) {
		w.fail(pkg, fmt.Sprintf("the provenance record's %s differs from the kept SHA256SUMS %s", prov.ZH, hashing.ZH(digest)), nil)
		return regproto.Download{}, false
	}
	archive := layout.ArchivePath(p, v, plat)
	info, err := w.tree.Reader().Stat(w.ctx, archive)
	if err != nil {
		w.fail(pkg, "the archive is missing", err)
		return regproto.Download{}, false
	}
	if prov.Size > 0 && info.Size != prov.Size {
		w.fail(pkg, fmt.Sprintf("the archive has %d bytes, the provenance record says %d", info.Size, prov.Size), nil)
		return regproto.Download{}, false
	}
	from := DownloadPath(p, v, plat)
	sigURL := relativeURL(from, emptySignaturePath(p, v))
	if !rel.emptySignature {
		sigURL = relativeURL(from, layout.SignaturePath(p, v))
	}
	return regproto.Download{
		Protocols:           []string{}, // not kept; an empty list makes clients skip the check
		OS:                  plat.OS,
		Arch:                plat.Arch,
		Filename:            prov.Filename,
		DownloadURL:         relativeURL(from, archive),
		ShasumsURL:          relativeURL(from, layout.SumsPath(p, v)),
		ShasumsSignatureURL: sigURL,
		Shasum:              strings.TrimPrefix(string(hashing.ZH(digest)), hashing.SchemeZH),
		SigningKeys:         regproto.SigningKeys{GPGPublicKeys: rel.keys},
	}, true
}

// relativeURL is the URL reference from the document at path from to the
// file at path to, both relative to the tree's root. Relative references
// keep working wherever the tree is served, under any path prefix.
func relativeURL(from, to string) string {
	up := strings.Repeat("../", strings.Count(from, "/"))
	return (&url.URL{Path: up + to}).String()
}

func (w *writer) warn(format string, args ...any) {
	w.report.Warnings = append(w.report.Warnings, fmt.Sprintf(format, args...))
}

func (w *writer) fail(pkg mirror.Package, problem string, err error) {
	w.problems = append(w.problems, &mirror.VerificationError{
		Package: pkg, Problem: problem + "; left out of the registry replica", Err: err,
	})
}

func (w *writer) failAll(p addrs.Provider, v addrs.Version, plats []addrs.Platform, problem string, err error) {
	for _, plat := range plats {
		w.fail(mirror.Package{Provider: p, Version: v, Platform: plat}, problem, err)
	}
}

func (w *writer) putJSON(rel string, v any) error {
	data, err := layout.Encode(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", rel, err)
	}
	return w.put(rel, data)
}

// put writes a file of the replica atomically, unless it already holds
// exactly data, so an unchanged replica keeps its files as they were.
func (w *writer) put(rel string, data []byte) error {
	w.written[rel] = true
	if old, err := w.tree.Reader().ReadFile(w.ctx, rel, int64(len(data))); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return w.tree.Put(w.ctx, rel, data)
}

// recentWrites is how far before its start a run leaves files it did not
// write alone in a store several writers share (a bucket): a file another
// run wrote meanwhile is not stale (the margin covers the store's clock
// being ahead of ours).
const recentWrites = time.Minute

// prune removes the files below Dir that this run did not write. In a
// store several writers share it leaves those written since shortly
// before the run started: another run may have just written them, and a
// later run removes them if they stay stale. A directory store (one writer
// at a time) drops the directories left empty.
func (w *writer) prune(modulesOnly bool) error {
	files, err := w.tree.List(w.ctx, Dir)
	if err != nil {
		return fmt.Errorf("registry replica: %w", err)
	}
	for _, rel := range files {
		if w.written[rel] || (modulesOnly && !isModuleFile(rel)) {
			continue
		}
		if w.shared && w.writtenRecently(rel) {
			continue
		}
		if err := w.tree.Delete(w.ctx, rel); err != nil {
			return fmt.Errorf("registry replica: remove stale %s: %w", rel, err)
		}
	}
	return nil
}

// HostBlock is the CLI configuration block that makes a client install
// host's providers from the replica of the mirror published at mirrorURL
// (which ends in "/").
func HostBlock(host addrs.Hostname, mirrorURL string) string {
	u := strings.TrimSuffix(mirrorURL, "/") + "/" + ServicesPath(host)
	return fmt.Sprintf("host %q {\n  services = { %q = %q }\n}\n", host.ForDisplay(), regproto.ProvidersV1, u)
}

// ServicesBlock is the CLI configuration block that points a client at
// the services of host's replica (relative paths, as Report.Services
// holds them) in the mirror published at mirrorURL.
func ServicesBlock(host addrs.Hostname, mirrorURL string, services map[string]string) string {
	base := strings.TrimSuffix(mirrorURL, "/")
	if len(services) == 1 {
		for id, rel := range services {
			return fmt.Sprintf("host %q {\n  services = { %q = %q }\n}\n", host.ForDisplay(), id, base+rel)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "host %q {\n  services = {\n", host.ForDisplay())
	for _, id := range slices.Sorted(maps.Keys(services)) {
		fmt.Fprintf(&b, "    %q = %q\n", id, base+services[id])
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// Holds says which replicas a tree already holds: provider documents,
// module documents. It lists the replica's directory once.
func Holds(ctx context.Context, tree *layout.Tree) (providers, modules bool, err error) {
	files, err := tree.List(ctx, Dir)
	if err != nil {
		return false, false, fmt.Errorf("registry replica: %w", err)
	}
	for _, rel := range files {
		switch {
		case isModuleFile(rel):
			modules = true
		case isProviderFile(rel):
			providers = true
		}
	}
	return providers, modules, nil
}

// isProviderFile reports a provider document of the replica.
func isProviderFile(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) > 4 && parts[0] == Dir && parts[2] == "v1" && parts[3] == "providers"
}
