package layout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// FirstSeenPath is the root file that records when a build first saw each
// release upstream, for the cool-down of new releases (a provider's
// "ADDRESS VERSION", a module's "module ADDRESS VERSION"). Clients never
// read it.
const FirstSeenPath = "first-seen.json"

// FirstSeen is the content of first-seen.json.
type FirstSeen struct {
	Versions map[string]time.Time `json:"versions"`
}

// ReadFirstSeen returns what the tree records; empty when it has none.
func (t *Tree) ReadFirstSeen(ctx context.Context) (map[string]time.Time, error) {
	seen, _, err := t.readFirstSeen(ctx)
	return seen, err
}

func (t *Tree) readFirstSeen(ctx context.Context) (map[string]time.Time, string, error) {
	data, tag, err := t.readTagged(ctx, FirstSeenPath, MaxDocumentBytes)
	if err != nil || data == nil {
		return map[string]time.Time{}, "", err
	}
	var f FirstSeen
	if err := decodeStrict(data, &f); err != nil {
		return nil, "", fmt.Errorf("parse %s: %w", FirstSeenPath, err)
	}
	if f.Versions == nil {
		f.Versions = map[string]time.Time{}
	}
	return f.Versions, tag, nil
}

// RecordFirstSeen merges seen into first-seen.json, keeping the earliest
// time of each release; another writer changing it meanwhile makes it
// read and merge again.
func (t *Tree) RecordFirstSeen(ctx context.Context, seen map[string]time.Time) error {
	if t.s == nil {
		return fmt.Errorf("record into %s: %w", t.Location(), ErrReadOnly)
	}
	for attempt := 0; ; attempt++ {
		err := t.mergeFirstSeen(ctx, seen)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

func (t *Tree) mergeFirstSeen(ctx context.Context, seen map[string]time.Time) error {
	have, tag, err := t.readFirstSeen(ctx)
	if err != nil {
		return err
	}
	merged := maps.Clone(have)
	for k, v := range seen {
		if old, ok := merged[k]; !ok || v.Before(old) {
			merged[k] = v.UTC()
		}
	}
	if maps.EqualFunc(have, merged, time.Time.Equal) {
		return nil
	}
	data, err := Encode(FirstSeen{Versions: merged})
	if err != nil {
		return err
	}
	return t.apply(ctx, write{rel: FirstSeenPath, kind: KindCatalog, content: Content{Data: data}, checked: true, tag: tag})
}
