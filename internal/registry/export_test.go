package registry

import (
	"net/url"

	"github.com/tfmirror/tfmirror/mirror"
)

// FileLocation is the location PackageMeta would give a file at u.
func (c *Client) FileLocation(u *url.URL) mirror.Location {
	return httpLocation{fetch: c.fetch, url: u}
}

// LocationURL is the URL a location PackageMeta gave fetches, or nil for
// any other location.
func LocationURL(l mirror.Location) *url.URL {
	if h, ok := l.(httpLocation); ok {
		return h.url
	}
	return nil
}
