package mirror

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Shard is one of Count parts of a build's plan, numbered from 1, so that
// Count builds, each with its own Index, together mirror what one build of
// the whole plan would, each package exactly once. The zero Shard is the
// whole plan.
//
// A package belongs to a shard by a hash of its provider, version and
// platform alone, so every worker agrees on its part even if the origin
// publishes a release while they start one after another: what each
// worker's plan holds of the others' parts does not matter.
type Shard struct {
	Index int // from 1 to Count
	Count int
	// ByVersion keeps every platform of a version in one shard: for
	// destinations that cannot merge concurrent writes of one document
	// (an OCI registry has no conditional tag update).
	ByVersion bool
}

// ParseShard reads "K/N" (K from 1 to N, as jest and playwright count).
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	index, kerr := strconv.Atoi(k)
	count, nerr := strconv.Atoi(n)
	if !ok || kerr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("shard %q: want K/N, e.g. 1/4 (a Kubernetes Indexed Job passes $((JOB_COMPLETION_INDEX + 1))/N)", s)
	}
	sh := Shard{Index: index, Count: count}
	return sh, sh.Validate()
}

// Validate checks that the shard is one of its count.
func (s Shard) Validate() error {
	switch {
	case s.Index == 0 && s.Count == 0:
		return nil
	case s.Count < 1:
		return errors.New("a shard count must be at least 1")
	case s.Index < 1 || s.Index > s.Count:
		return fmt.Errorf("shard %d/%d: K must be from 1 to %d", s.Index, s.Count, s.Count)
	}
	return nil
}

func (s Shard) String() string {
	if s.Count <= 1 {
		return "the whole plan"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns reports whether a package belongs to the shard.
func (s Shard) Owns(p addrs.Provider, v addrs.Version, plat addrs.Platform) bool {
	if s.Count <= 1 {
		return true
	}
	key := p.String() + " " + v.String()
	if !s.ByVersion {
		key += " " + plat.String()
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64()%uint64(s.Count) == uint64(s.Index-1)
}

// shard keeps the packages of the plan's releases that belong to s,
// dropping releases left with none.
func (s Shard) shard(releases []release) []release {
	if s.Count <= 1 {
		return releases
	}
	var out []release
	for _, r := range releases {
		var mine []addrs.Platform
		for _, plat := range r.req.Platforms {
			if s.Owns(r.req.Provider, r.version, plat) {
				mine = append(mine, plat)
			}
		}
		if len(mine) > 0 {
			r.req.Platforms = mine
			out = append(out, r)
		}
	}
	return out
}
