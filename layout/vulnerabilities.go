package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"
)

// VulnerabilitiesPath is the root file that records the known
// vulnerabilities builds with a vulnerability database found in the
// packages they verified, for the catalog page and for scripts; clients
// never read it. A build records the packages it read (a kept package
// keeps what an earlier build found); tfmirror audit reports every
// package against a newer database without it.
const VulnerabilitiesPath = "vulnerabilities.json"

// Vulnerabilities is the content of vulnerabilities.json.
type Vulnerabilities struct {
	// Packages are the advisory ids of each package with known
	// vulnerabilities, by "PROVIDER VERSION PLATFORM".
	Packages map[string][]string `json:"packages"`
	// Advisories describe every advisory Packages name, by id.
	Advisories map[string]Advisory `json:"advisories"`
	// Database names the vulnerability database the last build that
	// recorded findings matched against; absent in a record written
	// before tfmirror named it.
	Database *VulnDatabase `json:"database,omitempty"`
}

// VulnDatabase names a vulnerability database's contents: the newest
// modified time of its records (absent when they do not say), how many it
// holds, and the SHA-256 of what tfmirror read of it (its records, or a
// served database's index).
type VulnDatabase struct {
	Modified time.Time `json:"modified,omitzero"`
	Records  int       `json:"records"`
	SHA256   string    `json:"sha256"`
}

// Advisory is a known vulnerability as vulnerabilities.json records it.
type Advisory struct {
	Aliases []string `json:"aliases,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Module  string   `json:"module"`
	Found   string   `json:"found"`
	Fixed   string   `json:"fixed,omitempty"`
}

// PackageAdvisories are the advisories of one package a build read:
// none means it has no known vulnerability (any recorded before is
// removed).
type PackageAdvisories struct {
	Key        string // "PROVIDER VERSION PLATFORM"
	Advisories map[string]Advisory
}

// ReadVulnerabilities returns what the tree records; empty when it has
// none.
func (t *Tree) ReadVulnerabilities(ctx context.Context) (Vulnerabilities, error) {
	v, _, err := t.readVulnerabilities(ctx)
	return v, err
}

func (t *Tree) readVulnerabilities(ctx context.Context) (Vulnerabilities, string, error) {
	data, tag, err := t.readTagged(ctx, VulnerabilitiesPath, MaxDocumentBytes)
	if err != nil || data == nil {
		return Vulnerabilities{Packages: map[string][]string{}, Advisories: map[string]Advisory{}}, "", err
	}
	v, err := decodeVulnerabilities(data)
	return v, tag, err
}

// decodeVulnerabilities parses vulnerabilities.json, with empty maps
// where it has none.
func decodeVulnerabilities(data []byte) (Vulnerabilities, error) {
	var v Vulnerabilities
	if err := decodeStrict(data, &v); err != nil {
		return Vulnerabilities{}, fmt.Errorf("parse %s: %w", VulnerabilitiesPath, err)
	}
	if v.Packages == nil {
		v.Packages = map[string][]string{}
	}
	if v.Advisories == nil {
		v.Advisories = map[string]Advisory{}
	}
	return v, nil
}

// RecordVulnerabilities merges what a build found of the packages it read
// (matched against db) into vulnerabilities.json; another writer changing
// it meanwhile makes it read and merge again. Nothing is written when
// the findings and the database are those recorded. A record larger than
// MaxDocumentBytes is refused (tfmirror audit reports such a mirror).
func (t *Tree) RecordVulnerabilities(ctx context.Context, db VulnDatabase, found []PackageAdvisories) error {
	if t.s == nil {
		return fmt.Errorf("record into %s: %w", t.Location(), ErrReadOnly)
	}
	for attempt := 0; ; attempt++ {
		err := t.mergeVulnerabilities(ctx, db, found)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

func (t *Tree) mergeVulnerabilities(ctx context.Context, db VulnDatabase, found []PackageAdvisories) error {
	have, tag, err := t.readVulnerabilities(ctx)
	if err != nil {
		return err
	}
	merged := Vulnerabilities{Packages: maps.Clone(have.Packages), Advisories: maps.Clone(have.Advisories), Database: &db}
	for _, f := range found {
		delete(merged.Packages, f.Key)
		if len(f.Advisories) > 0 {
			merged.Packages[f.Key] = slices.Sorted(maps.Keys(f.Advisories))
			maps.Copy(merged.Advisories, f.Advisories)
		}
	}
	used := map[string]bool{}
	for _, ids := range merged.Packages {
		for _, id := range ids {
			used[id] = true
		}
	}
	maps.DeleteFunc(merged.Advisories, func(id string, _ Advisory) bool { return !used[id] })
	old, err := Encode(have)
	if err != nil {
		return err
	}
	data, err := Encode(merged)
	switch {
	case err != nil:
		return err
	case string(data) == string(old):
		return nil
	case len(data) > MaxDocumentBytes:
		return fmt.Errorf("%s would be larger than %d bytes: run tfmirror audit for a report of every package", VulnerabilitiesPath, MaxDocumentBytes)
	}
	return t.apply(ctx, write{rel: VulnerabilitiesPath, kind: KindCatalog, content: Content{Data: data}, checked: true, tag: tag})
}

// VulnerabilitiesRef is what catalog.json says of vulnerabilities.json:
// the file by name and SHA-256, so a signature of the catalog vouches for
// it, with the database it was matched against and its counts. The
// findings themselves are not in catalog.json, which stays small.
type VulnerabilitiesRef struct {
	Path     string        `json:"path"`
	SHA256   string        `json:"sha256"`
	Database *VulnDatabase `json:"database,omitempty"`
	// Packages counts the packages with known vulnerabilities,
	// Advisories the distinct advisories.
	Packages   int `json:"packages"`
	Advisories int `json:"advisories"`
}

// vulnerabilitiesRef is the reference to the tree's vulnerabilities.json,
// nil when it has none.
func (t *Tree) vulnerabilitiesRef(ctx context.Context) (*VulnerabilitiesRef, error) {
	data, err := t.r.ReadFile(ctx, VulnerabilitiesPath, MaxDocumentBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", VulnerabilitiesPath, err)
	}
	v, err := decodeVulnerabilities(data)
	if err != nil {
		return nil, err
	}
	return &VulnerabilitiesRef{Path: VulnerabilitiesPath, SHA256: sha256Hex(data), Database: v.Database,
		Packages: len(v.Packages), Advisories: len(v.Advisories)}, nil
}

// CheckVulnerabilitiesRef says whether the tree's vulnerabilities.json is
// the one ref (a signed catalog's reference; nil for none) names: nil
// when it is, else what differs.
func (t *Tree) CheckVulnerabilitiesRef(ctx context.Context, ref *VulnerabilitiesRef) error {
	now, err := t.vulnerabilitiesRef(ctx)
	switch {
	case err != nil:
		return err
	case ref == nil && now == nil:
		return nil
	case ref == nil:
		return fmt.Errorf("the mirror holds %s, but the signed catalog does not name it", VulnerabilitiesPath)
	case now == nil:
		return fmt.Errorf("the signed catalog names %s (SHA-256 %s), but the mirror does not hold it", ref.Path, ref.SHA256)
	case now.SHA256 != ref.SHA256:
		return fmt.Errorf("the signed catalog names %s with SHA-256 %s, but its bytes are %s", ref.Path, ref.SHA256, now.SHA256)
	}
	return nil
}
