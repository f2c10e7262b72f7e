package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Recheck selects the versions already mirrored whose evidence a build
// fetches again and compares with what the mirror kept, so that a
// release re-published with other bytes under the same version is
// noticed. The zero Recheck selects none.
//
// Below 100 percent, the versions are spread over Runs() runs by a hash
// of their name and version: run r checks the versions whose hash, modulo
// Runs(), is r modulo Runs(). So Runs() consecutive runs check every
// version exactly once, and no state is kept anywhere: a build that
// changes nothing writes nothing. Run is the day (a nightly build checks
// a new share each night; two runs on one day check the same share).
type Recheck struct {
	// Percent is the share of the versions each run checks at least: 0
	// none, 100 all.
	Percent int
	// Run numbers the run: the days since 1970-01-01 (RunOf).
	Run int64
}

// ParseRecheck reads a recheck share: "N%" with N from 1 to 100.
func ParseRecheck(s string) (Recheck, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || !strings.HasSuffix(s, "%") || n < 1 || n > 100 {
		return Recheck{}, fmt.Errorf("recheck share %q is not a percentage from 1%% to 100%%", s)
	}
	return Recheck{Percent: n}, nil
}

// RunOf numbers a run by its day (UTC).
func RunOf(t time.Time) int64 { return t.UTC().Unix() / (24 * 60 * 60) }

// Runs is how many consecutive runs check every version once: the
// smallest whole number of shares of Percent that covers all.
func (r Recheck) Runs() int64 {
	if r.Percent <= 0 {
		return 0
	}
	return int64((100 + r.Percent - 1) / r.Percent)
}

// Selects reports whether this run rechecks version v of name (a
// provider's or a module's address).
func (r Recheck) Selects(name string, v addrs.Version) bool {
	n := r.Runs()
	switch n {
	case 0:
		return false
	case 1:
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(name + " " + v.String()))
	return int64(h.Sum64()%uint64(n)) == ((r.Run%n)+n)%n
}

// recordKeeper is a destination that keeps each release's SHA256SUMS,
// signature and provenance: a mirror tree (directory, bucket) or an OCI
// registry (its provenance artifacts).
type recordKeeper interface {
	ReadRecord(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error)
}

var _ recordKeeper = layout.TreeDestination{}

// recheck fetches the origin's SHA256SUMS and signature of a release the
// destinations already hold (some of whose platforms are kept) and
// compares them with what each destination kept: a download document of
// one platform, SHA256SUMS and its signature, never an archive. It
// returns the failure of the release: a *RereleaseError when the origin
// now gives other evidence, nil when it gives the same (or the run does
// not select the release).
func (b *Builder) recheck(ctx context.Context, r release) error {
	if len(r.kept) == 0 || !b.Options.Recheck.Selects(r.req.Provider.String(), r.version) {
		return nil
	}
	pkg := Package{Provider: r.req.Provider, Version: r.version, Platform: r.kept[0].plat}
	var keepers []recordKeeper
	for _, d := range b.Dests {
		if k, ok := d.(recordKeeper); ok {
			keepers = append(keepers, k)
		}
	}
	if len(keepers) == 0 {
		b.warn("releases already mirrored are not rechecked: no destination keeps their SHA256SUMS where a build reads it back")
		return nil
	}
	c, err := b.packageMeta(ctx, pkg)
	if err != nil {
		return &PackageError{Package: pkg, Err: fmt.Errorf("recheck: %w", err)}
	}
	if c.meta.Sums == nil {
		b.warn("%s %s: not rechecked: %s keeps no SHA256SUMS to compare", pkg.Provider, pkg.Version, c.meta.HashesOnly)
		return nil
	}
	now, err := b.fetchEvidence(ctx, c)
	if err != nil {
		return err
	}
	var diffs []string
	for _, k := range keepers {
		rec, err := k.ReadRecord(ctx, pkg.Provider, pkg.Version)
		if errors.Is(err, fs.ErrNotExist) {
			continue // kept elsewhere; this destination gets it anew
		}
		if err != nil {
			return &PackageError{Package: pkg, Err: fmt.Errorf("recheck: %w", err)}
		}
		diffs = append(diffs, compareEvidence(rec, now)...)
	}
	if len(diffs) == 0 {
		return nil
	}
	return &RereleaseError{Package: Package{Provider: pkg.Provider, Version: pkg.Version}, Differences: slices.Compact(diffs)}
}

// packageMeta reads one package's download document.
func (b *Builder) packageMeta(ctx context.Context, pkg Package) (candidate, error) {
	release, err := slot(ctx, b.meta)
	if err != nil {
		return candidate{}, err
	}
	defer release()
	meta, err := b.Source.PackageMeta(ctx, pkg.Provider, pkg.Version, pkg.Platform)
	return candidate{pkg: pkg, meta: meta}, err
}

// fetched evidence of a release, as the origin gives it now, and its
// verdict.
type evidenceNow struct {
	Evidence
	verdict Verdict
	err     error // the evidence no longer verifies
}

// fetchEvidence fetches a release's SHA256SUMS and signature from the
// origin and judges them under the trust policy.
func (b *Builder) fetchEvidence(ctx context.Context, c candidate) (evidenceNow, error) {
	doc, err := b.fetchSmall(ctx, c, "SHA256SUMS", c.meta.Sums)
	if err != nil {
		return evidenceNow{}, err
	}
	ev := Evidence{Sums: doc, Keys: c.meta.SigningKeys, HashesOnly: c.meta.HashesOnly}
	if len(c.meta.SigningKeys) > 0 {
		if ev.Signature, err = b.fetchSmall(ctx, c, "SHA256SUMS signature", c.meta.Signature); err != nil {
			return evidenceNow{}, err
		}
		ev.History = b.history(ctx, c.pkg.Provider)
	}
	now := evidenceNow{Evidence: ev}
	now.verdict, now.err = b.Options.Trust.Authenticate(b.Checker, c.pkg, ev)
	return now, nil
}

// compareEvidence lists how the evidence the origin gives now differs
// from what a mirror kept: files whose digest changed, files added or
// removed, another signer, or evidence that no longer verifies. Other
// signature bytes by the same key over the same SHA256SUMS (a key
// re-issued, a release signed again) are no difference, nor the same
// files and digests signed again by a key the mirror already trusts for
// the provider: one that signed a release it holds, or one the trust
// policy accepts (accept_new_keys), as after a key rotation the origin
// re-signed its old releases with.
func compareEvidence(rec layout.Record, now evidenceNow) []string {
	var diffs []string
	if now.err != nil {
		diffs = append(diffs, "the origin's SHA256SUMS no longer verifies: "+now.err.Error())
	}
	if !bytes.Equal(rec.Sums, now.Sums) {
		diffs = append(diffs, compareSums(rec, now.Sums)...)
	}
	kept := Signer{KeyID: rec.Provenance.KeyID, Fingerprint: rec.Provenance.Fingerprint}
	signer := now.verdict.Signer
	trusted := now.verdict.Keys != nil && (now.verdict.Keys.Status == KeySame || now.verdict.Keys.Status == KeyAccepted)
	resigned := len(diffs) == 0 && trusted // the same files, a key the mirror trusts
	if now.err == nil && kept.KeyID != signer.KeyID && !SameKey(kept, signer) && !resigned {
		diffs = append(diffs, fmt.Sprintf("SHA256SUMS is signed by %s, where the mirror kept a signature by %s", signerText(signer), signerText(kept)))
	}
	return diffs
}

// signerText names a signer, or says there is none.
func signerText(s Signer) string {
	if s.KeyID == "" {
		return "no key"
	}
	return keyText(Signer{KeyID: s.KeyID, Fingerprint: s.Fingerprint})
}

// compareSums lists the files whose digests differ between the kept
// SHA256SUMS and the origin's, each named with its platform when the
// mirror holds it. The same files and digests in other bytes (another
// order) are no difference.
func compareSums(rec layout.Record, doc []byte) []string {
	kept, err := hashing.ParseSums(rec.Sums)
	if err != nil {
		return []string{"the SHA256SUMS the mirror kept is malformed: " + err.Error()}
	}
	origin, err := hashing.ParseSums(doc)
	if err != nil {
		return []string{"the origin's SHA256SUMS is malformed: " + err.Error()}
	}
	platforms := map[string]string{}
	for plat, a := range rec.Provenance.Archives {
		platforms[a.Filename] = " (" + plat + ")"
	}
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(kept)) {
		o, ok := origin[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s%s: removed at the origin; the mirror kept %s", name, platforms[name], hashing.ZH(kept[name])))
		case o != kept[name]:
			diffs = append(diffs, fmt.Sprintf("%s%s: the mirror kept %s, the origin now lists %s", name, platforms[name], hashing.ZH(kept[name]), hashing.ZH(o)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(origin)) {
		if _, ok := kept[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: added at the origin, %s", name, hashing.ZH(origin[name])))
		}
	}
	return diffs // none: the same files and digests in other bytes
}

// RereleaseError is a release the origin now publishes with other
// evidence than the mirror kept: the same version re-released with other
// bytes, other files, or another signer. The mirror keeps what it has.
type RereleaseError struct {
	Package     Package // the release
	Differences []string
}

func (e *RereleaseError) Error() string {
	return "the origin now gives other evidence than the mirror kept (the mirror keeps its packages as they were): " + strings.Join(e.Differences, "; ")
}
