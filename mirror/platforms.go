package mirror

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// checkListed notes which of the release's platforms its version list
// says it does not publish (listed: what the list names, none when it
// names nothing).
func (r *release) checkListed(listed []addrs.Platform) {
	if len(listed) == 0 {
		return
	}
	for _, plat := range r.req.Platforms {
		if !slices.Contains(listed, plat) {
			r.unpublished = append(r.unpublished, plat)
		}
	}
	if len(r.unpublished) > 0 {
		r.listed = listed
	}
}

// checkPlatforms refuses a platform that no selected release publishes,
// as far as the source's version lists say (PlatformLister): mirroring it
// would skip every package, and a nightly job would stay green with
// nothing mirrored for it. A platform only some releases lack is left to
// the build, which skips those packages with a warning (or fails them
// with Strict). A release whose platforms the source does not list
// counts as publishing every platform: nothing is refused on a guess.
// It runs on merged releases before sharding, so every worker of a
// sharded build decides alike.
func (b *Builder) checkPlatforms(rs []release) error {
	var asked []addrs.Platform
	published := make(map[addrs.Platform]bool)
	for _, r := range rs {
		for _, plat := range r.req.Platforms {
			if !slices.Contains(asked, plat) {
				asked = append(asked, plat)
			}
			if !slices.Contains(r.unpublished, plat) {
				published[plat] = true
			}
		}
	}
	var errs []error
	for _, plat := range asked {
		if !published[plat] {
			errs = append(errs, unpublishedError(plat, rs))
		}
	}
	return errors.Join(errs...)
}

// UnpublishedPlatformError is a platform asked for that no selected
// release publishes: the user's to fix.
type UnpublishedPlatformError struct {
	Platform addrs.Platform
	// Releases are the releases that were asked for it; Published, what
	// their version lists name.
	Releases, Published []string
}

func (e *UnpublishedPlatformError) Error() string {
	return fmt.Sprintf("platform %s: no selected release publishes it, as the registries' version lists say (%s; they publish %s): remove it from platforms (or --platform)",
		e.Platform, strings.Join(e.Releases, ", "), orNothing(e.Published))
}

// unpublishedError says that no selected release publishes plat, which
// releases were selected, and what they publish.
func unpublishedError(plat addrs.Platform, rs []release) error {
	var asking []release
	for _, r := range rs {
		if slices.Contains(r.req.Platforms, plat) {
			asking = append(asking, r)
		}
	}
	slices.SortFunc(asking, func(a, b release) int {
		if c := strings.Compare(a.req.Provider.String(), b.req.Provider.String()); c != 0 {
			return c
		}
		switch {
		case a.version.LessThan(b.version):
			return -1
		case b.version.LessThan(a.version):
			return 1
		}
		return 0
	})
	releases := make([]string, len(asking))
	for i, r := range asking {
		releases[i] = r.req.Provider.String() + " " + r.version.String()
	}
	if len(releases) > 4 {
		releases = append(releases[:4], fmt.Sprintf("%d more", len(releases)-4))
	}
	var names []string
	for _, r := range asking {
		for _, p := range r.listed {
			if !slices.Contains(names, p.String()) {
				names = append(names, p.String())
			}
		}
	}
	slices.Sort(names)
	return &UnpublishedPlatformError{Platform: plat, Releases: releases, Published: names}
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}
