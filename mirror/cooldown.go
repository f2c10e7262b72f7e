package mirror

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Cooldown holds back releases first seen upstream less than a minimum
// age ago, as package managers do with a minimum release age: a version
// pushed by someone who stole a maintainer's key is usually found and
// pulled within days. The first time a build sees a version is recorded
// (Seen, kept in the mirror by the caller), and the clock runs from there.
type Cooldown struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	seen  map[string]time.Time
	new   bool
	holds []Hold
	added map[string]bool // the keys this build saw first
}

// Hold is a version the cool-down held back.
type Hold struct {
	// What is the provider's address, or "module " and the module's.
	What             string
	Version          addrs.Version
	FirstSeen, Until time.Time
	// New says the version was first seen by this build.
	New bool
}

// Holds returns the versions held back so far, each once.
func (c *Cooldown) Holds() []Hold {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.holds)
}

// NewCooldown starts from what the mirror recorded.
func NewCooldown(seen map[string]time.Time, now func() time.Time) *Cooldown {
	if now == nil {
		now = time.Now
	}
	return &Cooldown{Now: now, seen: maps.Clone(seen)}
}

// Seen returns every first-seen time, the recorded and the new ones, and
// whether this build added any.
func (c *Cooldown) Seen() (map[string]time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.seen), c.new
}

// admit reports whether the version key may be published under minAge,
// recording when it was first seen, and until when it is held back.
func (c *Cooldown) admit(key string, minAge time.Duration) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now().UTC().Truncate(time.Second)
	first, ok := c.seen[key]
	if !ok {
		if c.seen == nil {
			c.seen = map[string]time.Time{}
		}
		first, c.seen[key], c.new = now, now, true
		if c.added == nil {
			c.added = map[string]bool{}
		}
		c.added[key] = true
	}
	until := first.Add(minAge)
	return until, !now.Before(until)
}

// addedNow says this build saw key first.
func (c *Cooldown) addedNow(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.added[key]
}

// hold records h, once per version.
func (c *Cooldown) hold(h Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.ContainsFunc(c.holds, func(o Hold) bool { return o.What == h.What && o.Version.Same(h.Version) }) {
		c.holds = append(c.holds, h)
	}
}

// filter keeps the versions of available that are old enough, and
// describes the others as held back. With no cooldown or no minimum age,
// it keeps all.
func (c *Cooldown) filter(what string, available addrs.VersionList, minAge time.Duration) (addrs.VersionList, []string) {
	if c == nil || minAge <= 0 {
		return available, nil
	}
	var keep addrs.VersionList
	var held []string
	for _, v := range available {
		until, ok := c.admit(what+" "+v.String(), minAge)
		if ok {
			keep = append(keep, v)
			continue
		}
		c.hold(Hold{What: what, Version: v, FirstSeen: until.Add(-minAge), Until: until, New: c.addedNow(what + " " + v.String())})
		held = append(held, fmt.Sprintf("%s %s is held back until %s (min_age %s: first seen upstream %s)",
			what, v, until.Format(time.RFC3339), minAge, until.Add(-minAge).Format(time.RFC3339)))
	}
	return keep, held
}
