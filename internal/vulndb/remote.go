package vulndb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"
	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// Bounds on what a served database may hold and make tfmirror fetch: the
// index of vuln.go.dev is about 1 MiB for about 1,500 modules.
const (
	maxIndexBytes   = 64 << 20
	maxIndexModules = 200_000
	maxIDLength     = 128
	fetchWorkers    = 8
)

// validID is what an advisory id may look like to be fetched as
// ID/<id>.json: GO-2024-1234, GHSA-xxxx-xxxx-xxxx, no path.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Remote is the database in the layout vuln.go.dev serves, at an https
// URL: its index of modules (index/modules.json) is read once, then only
// the records (ID/<id>.json) of the modules asked about that their
// version may be affected by, each once. Every request goes through the
// Fetcher given (its time bounds, retries and redaction).
type Remote struct {
	base    *url.URL
	fetch   *httpx.Fetcher
	modules map[string][]indexVuln
	// identity is the index's.
	identity Identity

	mu      sync.Mutex
	records map[string]*Record
}

// indexVuln is an advisory of a module in index/modules.json, with the
// latest version that fixes it ("" when none does, or it came back).
type indexVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Fixed    string    `json:"fixed"`
}

// OpenRemote reads the index of the database served at base (an https
// URL; vuln.go.dev's is https://vuln.go.dev).
func OpenRemote(ctx context.Context, base string, fetch *httpx.Fetcher) (*Remote, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/")
	switch {
	case err != nil:
		return nil, errors.New("read the vulnerability database: its location is not a valid URL") // never quoted: it may hold credentials
	case u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("read the vulnerability database %s: not an https:// URL", httpx.Redact(u))
	}
	r := &Remote{base: u, fetch: fetch, records: map[string]*Record{}}
	if err := r.readIndex(ctx); err != nil {
		return nil, fmt.Errorf("read the vulnerability database %s: %w", httpx.Redact(u), err)
	}
	return r, nil
}

func (r *Remote) readIndex(ctx context.Context) error {
	u := r.base.JoinPath("index", "modules.json")
	data, _, _, err := r.fetch.Document(ctx, u, nil, maxIndexBytes)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	r.identity.SHA256 = hex.EncodeToString(sum[:])
	var index []struct {
		Path  string      `json:"path"`
		Vulns []indexVuln `json:"vulns"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return fmt.Errorf("parse index/modules.json: %w", err)
	}
	if len(index) > maxIndexModules {
		return fmt.Errorf("index/modules.json lists more than %d modules", maxIndexModules)
	}
	r.modules = make(map[string][]indexVuln, len(index))
	ids, distinct := 0, map[string]bool{}
	for _, m := range index {
		for _, v := range m.Vulns {
			if len(v.ID) > maxIDLength || !validID.MatchString(v.ID) {
				return fmt.Errorf("index/modules.json: module %s lists an advisory with the id %s", excerpt.Quote(m.Path), excerpt.Quote(v.ID))
			}
			distinct[v.ID] = true
			if v.Modified.After(r.identity.Modified) {
				r.identity.Modified = v.Modified
			}
		}
		if ids += len(m.Vulns); ids > maxRecords {
			return fmt.Errorf("index/modules.json lists more than %d advisories", maxRecords)
		}
		r.modules[m.Path] = append(r.modules[m.Path], m.Vulns...)
	}
	r.identity.Records = len(distinct)
	return nil
}

// Match is DB.Match against the served database: it first fetches the
// records it has not fetched yet that may affect the program's modules
// at their versions and its Go version.
func (r *Remote) Match(ctx context.Context, p Program) ([]Finding, error) {
	need := r.needed(p)
	if err := r.fetchAll(ctx, need); err != nil {
		return nil, fmt.Errorf("read the vulnerability database %s: %w", httpx.Redact(r.base), err)
	}
	db := newDB()
	r.mu.Lock()
	for _, id := range need {
		db.add(r.records[id])
	}
	r.mu.Unlock()
	return db.Match(p), nil
}

// needed lists the advisories, by id, the index says may affect the
// modules at their versions: those no release fixes or fixed in a later
// version, as golang.org/x/vuln's client selects them.
func (r *Remote) needed(p Program) []string {
	var ids []string
	add := func(path, v string) {
		for _, iv := range r.modules[path] {
			if iv.Fixed == "" || semver.Compare(v, "v"+iv.Fixed) < 0 {
				ids = append(ids, iv.ID)
			}
		}
	}
	if v := GoSemver(p.GoVersion); v != "" {
		add(StdlibModule, v)
	}
	for _, m := range p.Modules {
		if semver.IsValid(m.Version) {
			add(m.Path, m.Version)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// fetchAll fetches the records of ids not fetched yet, a few at a time.
func (r *Remote) fetchAll(ctx context.Context, ids []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchWorkers)
	for _, id := range ids {
		r.mu.Lock()
		_, done := r.records[id]
		r.mu.Unlock()
		if done {
			continue
		}
		g.Go(func() error {
			rec, err := r.fetchRecord(gctx, id)
			if err != nil {
				return err
			}
			r.mu.Lock()
			r.records[id] = rec
			r.mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

func (r *Remote) fetchRecord(ctx context.Context, id string) (*Record, error) {
	name := "ID/" + id + ".json"
	data, _, _, err := r.fetch.Document(ctx, r.base.JoinPath("ID", id+".json"), nil, maxRecordBytes)
	if err != nil {
		return nil, err
	}
	rec, err := parseRecord(data, name)
	if err != nil {
		return nil, err
	}
	if rec.ID != id {
		return nil, fmt.Errorf("%s: %w: it holds %s", name, errWrongID, excerpt.Quote(rec.ID))
	}
	return rec, nil
}

var errWrongID = errors.New("the record is not the one the index names")
