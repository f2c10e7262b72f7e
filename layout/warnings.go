package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// WarningsPath is the relative path of a provider's kept warnings: what
// the origin's version list said of the provider as a whole (the
// provider registry protocol's "warnings": a deprecation, say), which
// the network mirror protocol has no place for. The catalog
// (DescribeCatalog), the catalog page and the provider registry replica
// show them; clients never read this file. It is written after the
// provider's documents and before the views that show it, and only when
// the warnings change.
func WarningsPath(p addrs.Provider) string {
	return path.Join(ProviderDir(p), "warnings.json")
}

// maxWarningsBytes bounds a kept warnings file: the registry client keeps
// at most 100 warnings of 4 KiB.
const maxWarningsBytes = 1 << 20

// Warnings is the content of a provider's warnings.json.
type Warnings struct {
	// Warnings are the origin's warnings, in its order.
	Warnings []string `json:"warnings"`
}

// ReadWarnings returns the warnings the tree keeps of p; none when it
// keeps none.
func (t *Tree) ReadWarnings(ctx context.Context, p addrs.Provider) ([]string, error) {
	data, err := t.readDoc(ctx, WarningsPath(p), maxWarningsBytes)
	if err != nil || data == nil {
		return nil, err
	}
	w, err := DecodeWarnings(data)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", WarningsPath(p), err)
	}
	return w.Warnings, nil
}

// DecodeWarnings decodes a warnings.json document, refusing unknown
// fields.
func DecodeWarnings(data []byte) (Warnings, error) {
	var w Warnings
	err := decodeStrict(data, &w)
	return w, err
}

// RecordWarnings keeps what p's version list warned of now: the file is
// written when the warnings differ from those kept, deleted when there
// are none any more, and left alone otherwise (a build that changes
// nothing writes nothing). A provider the tree does not hold (no
// index.json) gets none.
func (t *Tree) RecordWarnings(ctx context.Context, p addrs.Provider, warnings []string) error {
	if t.s == nil {
		return fmt.Errorf("record the warnings of %s into %s: %w", p, t.Location(), ErrReadOnly)
	}
	for attempt := 0; ; attempt++ {
		err := t.recordWarnings(ctx, p, warnings)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

func (t *Tree) recordWarnings(ctx context.Context, p addrs.Provider, warnings []string) error {
	rel := WarningsPath(p)
	old, tag, err := t.readTagged(ctx, rel, maxWarningsBytes)
	if err != nil {
		return err
	}
	if len(warnings) == 0 {
		if old == nil {
			return nil
		}
		if err := t.s.Delete(ctx, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", rel, err)
		}
		return nil
	}
	if _, err := t.r.Stat(ctx, IndexPath(p)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	data, err := Encode(Warnings{Warnings: slices.Clone(warnings)})
	if err != nil || string(data) == string(old) {
		return err
	}
	return t.apply(ctx, write{rel: rel, kind: KindIndex, content: Content{Data: data}, checked: true, tag: tag})
}
