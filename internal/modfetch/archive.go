package modfetch

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// maxRedirects is how many redirects an archive download follows when the
// caller's client has no policy of its own.
const maxRedirects = 10

// fetchArchive downloads an archive to a temporary directory next to dst,
// then extracts it into dst.
func (f *Fetcher) fetchArchive(ctx context.Context, src source, dst string) (Result, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".modfetch-download-*")
	if err != nil {
		return Result{}, fmt.Errorf("make download directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	file := filepath.Join(tmp, "archive")
	sum, err := f.download(ctx, src.url, file)
	if err != nil {
		return Result{}, err
	}
	if err := extract(file, src.archive, dst, f.limits); err != nil {
		return Result{}, fmt.Errorf("extract %s archive: %w", src.archive, err)
	}
	return Result{SHA256: hex.EncodeToString(sum[:])}, nil
}

// download streams u to file, at most maxDownload bytes, and returns the
// SHA-256 of what it wrote.
func (f *Fetcher) download(ctx context.Context, u *url.URL, file string) ([32]byte, error) {
	resp, err := f.get(ctx, u)
	if err != nil {
		return [32]byte{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return [32]byte{}, fmt.Errorf("download: server answered %s", excerpt.Text(resp.Status, 0))
	}
	if resp.ContentLength > f.maxDownload {
		return [32]byte{}, fmt.Errorf("download: archive of %d bytes exceeds the limit of %d bytes", resp.ContentLength, f.maxDownload)
	}
	out, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return [32]byte{}, fmt.Errorf("download: %w", err)
	}
	h := hashing.NewWriter()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(resp.Body, f.maxDownload+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && ctx.Err() != nil {
		// The deadline may end a body as if it were complete: what arrived
		// before it is not the archive.
		err = context.Cause(ctx)
	}
	switch {
	case err != nil:
		return [32]byte{}, fmt.Errorf("download: %w", stripURLError(err))
	case n > f.maxDownload:
		return [32]byte{}, fmt.Errorf("download: archive exceeds the limit of %d bytes", f.maxDownload)
	}
	return h.Sum(), nil
}

// get sends the request, with the host's credentials if it has any.
func (f *Fetcher) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("download: %w", stripURLError(err))
	}
	if auth, ok := f.credentials(u.Host); ok {
		req.Header.Set("Authorization", auth)
	}
	resp, err := guarded(f.http).Do(req)
	if err != nil {
		// *url.Error would print the URL with its userinfo name and query.
		return nil, fmt.Errorf("download: %w", stripURLError(err))
	}
	return resp, nil
}

// guarded returns a copy of c whose redirects go only where a location
// could (https, or http to loopback) and carry no credentials once they
// have left the first request's origin; then c's own policy applies.
func guarded(c *http.Client) *http.Client {
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		httpx.DropCredentials(req, via)
		if err := checkTransport(req.URL, false); err != nil {
			return fmt.Errorf("refused the redirect to %s: %w", httpx.Redact(req.URL), err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &g
}
