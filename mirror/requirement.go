package mirror

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Requirement says which releases of one provider to mirror and for which
// platforms.
type Requirement struct {
	Provider addrs.Provider
	// Constraints is the version constraint as written, for messages.
	Constraints string
	// Allowed is the set of versions Constraints selects.
	Allowed addrs.VersionSet
	// Newest keeps only the newest N matching versions; 0 keeps all.
	Newest    int
	Platforms []addrs.Platform
	// MinAge holds back versions first seen upstream less than this long
	// ago (Options.Cooldown); 0 publishes them at once.
	MinAge time.Duration
}

// CheckProvider reports why a provider cannot be mirrored, if it cannot.
func CheckProvider(p addrs.Provider) error {
	if addrs.HasPort(p) {
		return fmt.Errorf("provider %s has a port in its hostname: OpenTofu and Terraform cannot install such providers through a network mirror (they read the hostname as a URL scheme); use a hostname without a port", p)
	}
	return nil
}

// selectVersions returns the versions to mirror, newest first.
func (r Requirement) selectVersions(available addrs.VersionList) addrs.VersionList {
	// Filter reuses its receiver's storage: work on a copy.
	matched := slices.Clone(available).Filter(r.Allowed)
	matched.Sort()
	var out addrs.VersionList
	for i := len(matched) - 1; i >= 0; i-- {
		if len(out) > 0 && out[len(out)-1].Same(matched[i]) {
			continue
		}
		out = append(out, matched[i])
		if r.Newest > 0 && len(out) == r.Newest {
			break
		}
	}
	return out
}

// Select returns the versions of available the requirement selects,
// newest first, by the very rule a build applies to the origin's list:
// the versions Allowed admits, only the newest Newest of them when
// Newest is set. Prune applies it to the versions a mirror holds.
func (r Requirement) Select(available addrs.VersionList) addrs.VersionList {
	return r.selectVersions(available)
}
