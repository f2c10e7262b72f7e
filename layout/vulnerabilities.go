package layout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	var v Vulnerabilities
	if err := decodeStrict(data, &v); err != nil {
		return Vulnerabilities{}, "", fmt.Errorf("parse %s: %w", VulnerabilitiesPath, err)
	}
	if v.Packages == nil {
		v.Packages = map[string][]string{}
	}
	if v.Advisories == nil {
		v.Advisories = map[string]Advisory{}
	}
	return v, tag, nil
}

// RecordVulnerabilities merges what a build found of the packages it read
// into vulnerabilities.json; another writer changing it meanwhile makes
// it read and merge again. A record larger than MaxDocumentBytes is
// refused (tfmirror audit reports such a mirror).
func (t *Tree) RecordVulnerabilities(ctx context.Context, found []PackageAdvisories) error {
	if t.s == nil {
		return fmt.Errorf("record into %s: %w", t.Location(), ErrReadOnly)
	}
	for attempt := 0; ; attempt++ {
		err := t.mergeVulnerabilities(ctx, found)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

func (t *Tree) mergeVulnerabilities(ctx context.Context, found []PackageAdvisories) error {
	have, tag, err := t.readVulnerabilities(ctx)
	if err != nil {
		return err
	}
	merged := Vulnerabilities{Packages: maps.Clone(have.Packages), Advisories: maps.Clone(have.Advisories)}
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
