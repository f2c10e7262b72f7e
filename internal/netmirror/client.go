package netmirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/layout"
)

// Client reads one published mirror: a layout.Reader over HTTP, so a
// published mirror is read through the same layout.Tree as a directory.
type Client struct {
	base  *url.URL
	fetch *httpx.Fetcher
}

var _ layout.Reader = (*Client)(nil)

// New returns a client for the mirror at base, an http or https URL, that
// sends its requests with f. Like OpenTofu's network_mirror, base is a
// directory: a missing trailing slash is added.
func New(base string, f *httpx.Fetcher) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("mirror URL %s must be an http or https URL", excerpt.Quote(base))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return &Client{base: u, fetch: f}, nil
}

// Location is the mirror's URL, without credentials.
func (c *Client) Location() string { return c.base.Redacted() }

// url resolves a tree-relative path.
func (c *Client) url(rel string) *url.URL {
	return c.base.ResolveReference(&url.URL{Path: path.Clean(rel)})
}

// ReadFile fetches a file. A JSON document a client reads must be served
// as application/json, as OpenTofu requires; catalog.json, which clients
// never read, may be served as anything. A 404 wraps fs.ErrNotExist.
func (c *Client) ReadFile(ctx context.Context, rel string, limit int64) ([]byte, error) {
	var header http.Header
	if isClientJSON(rel) {
		header = http.Header{"Accept": {"application/json"}}
	}
	data, _, mt, err := c.fetch.Document(ctx, c.url(rel), header, limit)
	if errors.Is(err, httpx.ErrTooLarge) {
		err = fmt.Errorf("%w (%w)", err, layout.ErrTooLarge)
	}
	if err != nil {
		return nil, notFound(err)
	}
	if isClientJSON(rel) && mt != "application/json" {
		return nil, fmt.Errorf("%s is served as %s; OpenTofu requires application/json", c.url(rel).Redacted(), excerpt.Quote(mt))
	}
	return data, nil
}

func isClientJSON(rel string) bool {
	return strings.HasSuffix(rel, ".json") && rel != layout.CatalogPath
}

// Stat asks for a file's size with a HEAD request; a size the server does
// not send is -1.
func (c *Client) Stat(ctx context.Context, rel string) (layout.FileInfo, error) {
	u := c.url(rel)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return layout.FileInfo{}, err
	}
	client := c.fetch.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return layout.FileInfo{}, fmt.Errorf("HEAD %s: %w", u.Redacted(), err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return layout.FileInfo{}, fmt.Errorf("HEAD %s: %w", u.Redacted(), fs.ErrNotExist)
	case resp.StatusCode != http.StatusOK:
		return layout.FileInfo{}, fmt.Errorf("HEAD %s: %s", u.Redacted(), excerpt.Text(resp.Status, 0))
	}
	info := layout.FileInfo{Size: resp.ContentLength}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		info.ModTime = t
	}
	return info, nil
}

// Open downloads a file, with retries, into a temporary file that is
// removed when closed. A 404 wraps fs.ErrNotExist.
func (c *Client) Open(ctx context.Context, rel string) (io.ReadCloser, error) {
	f, err := os.CreateTemp("", "tfmirror-download-*")
	if err != nil {
		return nil, err
	}
	tmp := &tempFile{File: f}
	err = c.fetch.Fetch(ctx, c.url(rel), nil, tmp)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = tmp.Close()
		return nil, notFound(err)
	}
	return tmp, nil
}

// notFound makes a 404 wrap fs.ErrNotExist.
func notFound(err error) error {
	var se *httpx.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

// tempFile is a download sink that deletes itself when closed.
type tempFile struct{ *os.File }

func (t *tempFile) Reset() error {
	if err := t.Truncate(0); err != nil {
		return err
	}
	_, err := t.Seek(0, io.SeekStart)
	return err
}

func (t *tempFile) Close() error {
	err := t.File.Close()
	if rerr := os.Remove(t.Name()); err == nil {
		err = rerr
	}
	return err
}
