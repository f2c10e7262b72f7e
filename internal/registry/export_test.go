package registry

import (
	"net/url"

	"github.com/tfmirror/tfmirror/internal/httploc"
	"github.com/tfmirror/tfmirror/mirror"
)

// FileLocation is the location PackageMeta would give a file at u.
func (c *Client) FileLocation(u *url.URL) mirror.Location {
	return httploc.New(c.fetch, u)
}

// LocationURL is the URL a location PackageMeta gave fetches, or nil for
// any other location.
func LocationURL(l mirror.Location) *url.URL {
	if h, ok := l.(httploc.Location); ok {
		return h.URL()
	}
	return nil
}
