package netmirror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Size limits for the documents a mirror serves.
const (
	maxJSON = 16 << 20
	maxSums = 1 << 20
)

// Client reads one published mirror.
type Client struct {
	base  *url.URL
	fetch *httpx.Fetcher
}

var _ mirror.Catalog = (*Client)(nil)

// New returns a client for the mirror at base, an http or https URL, that
// sends its requests with f. Like OpenTofu's network_mirror, base is a
// directory: a missing trailing slash is added.
func New(base string, f *httpx.Fetcher) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("mirror URL %q must be an http or https URL", base)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return &Client{base: u, fetch: f}, nil
}

// url resolves a tree-relative path (as package layout builds them).
func (c *Client) url(rel string) *url.URL {
	return c.base.ResolveReference(&url.URL{Path: path.Clean(filepath.ToSlash(rel))})
}

// Versions lists the versions in the provider's index.json.
func (c *Client) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	data, err := c.getJSON(ctx, layout.IndexPath(p))
	if isNotFound(err) {
		return nil, fmt.Errorf("%s: %w: %w", p, mirror.ErrNotInMirror, err)
	}
	if err != nil {
		return nil, err
	}
	idx, err := layout.DecodeIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.url(layout.IndexPath(p)).Redacted(), err)
	}
	var out addrs.VersionList
	for raw := range idx.Versions {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.url(layout.IndexPath(p)).Redacted(), err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Record fetches the provenance files kept for a release.
func (c *Client) Record(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error) {
	var r layout.Record
	data, err := c.getJSON(ctx, layout.ProvenancePath(p, v))
	if err != nil {
		return r, err
	}
	if r.Provenance, err = layout.DecodeProvenance(data); err != nil {
		return r, fmt.Errorf("%s: %w", c.url(layout.ProvenancePath(p, v)).Redacted(), err)
	}
	if r.Sums, err = c.get(ctx, layout.SumsPath(p, v), maxSums); err != nil {
		return r, err
	}
	r.Signature, err = c.get(ctx, layout.SignaturePath(p, v), maxSums)
	if isNotFound(err) && len(r.Provenance.SigningKeys) == 0 {
		return r, nil // an unsigned release keeps no signature
	}
	return r, err
}

func (c *Client) getJSON(ctx context.Context, rel string) ([]byte, error) {
	data, _, mt, err := c.fetch.Document(ctx, c.url(rel), http.Header{"Accept": {"application/json"}}, maxJSON)
	if err != nil {
		return nil, err
	}
	if mt != "application/json" {
		return nil, fmt.Errorf("%s is served as %q; OpenTofu requires application/json", c.url(rel).Redacted(), mt)
	}
	return data, nil
}

func (c *Client) get(ctx context.Context, rel string, limit int64) ([]byte, error) {
	data, _, _, err := c.fetch.Document(ctx, c.url(rel), nil, limit)
	return data, err
}

func isNotFound(err error) bool {
	var se *httpx.StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound
}
