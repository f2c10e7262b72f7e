package layout

import (
	"path"
	"strings"
)

// MediaType is the Content-Type a file of the tree is served with, by its
// name: OpenTofu refuses JSON documents served as anything but
// application/json, browsers and feed readers need the page's and the
// feed's. Whoever stores or serves a tree (a bucket, tfmirror serve) asks
// here, so every host serves a file alike.
func MediaType(rel string) string {
	name := path.Base(rel)
	switch {
	case strings.HasSuffix(name, ".json"):
		return "application/json"
	case strings.HasSuffix(name, ".zip"):
		return "application/zip"
	case strings.HasSuffix(name, "SHA256SUMS"):
		return "text/plain; charset=utf-8"
	case strings.HasSuffix(name, ".sig"), strings.HasSuffix(name, ".asc"):
		return "application/pgp-signature"
	case strings.HasSuffix(name, ".html"):
		return "text/html; charset=utf-8"
	case strings.HasSuffix(name, ".atom"):
		return "application/atom+xml"
	case strings.HasSuffix(name, ".tar.gz"), strings.HasSuffix(name, ".tgz"):
		return "application/gzip"
	}
	return "application/octet-stream"
}
