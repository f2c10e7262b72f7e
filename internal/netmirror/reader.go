package netmirror

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

var _ mirror.MirrorReader = (*Client)(nil)

// Providers lists the providers in the mirror's catalog.json.
func (c *Client) Providers(ctx context.Context) ([]addrs.Provider, error) {
	// Clients never read the catalog, so its content type is not checked.
	data, err := c.get(ctx, layout.CatalogPath, maxJSON)
	if err != nil {
		return nil, fmt.Errorf("%w (a mirror built by tfmirror lists its providers there; HTTP has no directory listing)", err)
	}
	catalog, err := layout.DecodeCatalog(data)
	if err != nil {
		return nil, err
	}
	out := make([]addrs.Provider, 0, len(catalog.Providers))
	for _, raw := range catalog.Providers {
		p, err := addrs.ParseProvider(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", layout.CatalogPath, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ReadDocument fetches a JSON document as a client would: it must be
// served as application/json. A 404 wraps fs.ErrNotExist.
func (c *Client) ReadDocument(ctx context.Context, rel string) ([]byte, error) {
	data, err := c.getJSON(ctx, rel)
	if isNotFound(err) {
		return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return data, err
}

// OpenFile downloads a file, with retries, into a temporary file that is
// removed when closed. A 404 wraps fs.ErrNotExist.
func (c *Client) OpenFile(ctx context.Context, rel string) (io.ReadCloser, error) {
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
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return nil, err
	}
	return tmp, nil
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
