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

// download streams u to file, at most maxDownload bytes, with the
// transfer policy's limits and retries (a host that stops sending, or
// sends too slowly, fails the attempt), and returns the SHA-256 of what it
// wrote.
func (f *Fetcher) download(ctx context.Context, u *url.URL, file string) ([32]byte, error) {
	out, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return [32]byte{}, fmt.Errorf("download: %w", err)
	}
	defer func() { _ = out.Close() }()
	sink := &fileSink{f: out, h: hashing.NewWriter(), limit: f.maxDownload}
	var header http.Header
	if auth, ok := f.credentials(u.Host); ok {
		header = http.Header{"Authorization": {auth}}
	}
	fetcher := httpx.NewFetcher(guarded(f.http), f.net)
	if err := fetcher.Fetch(ctx, u, header, sink); err != nil {
		return [32]byte{}, fmt.Errorf("download: %w", err)
	}
	if err := out.Close(); err != nil {
		return [32]byte{}, fmt.Errorf("download: %w", err)
	}
	return sink.h.Sum(), nil
}

// fileSink is an httpx.LimitedSink writing to a file and its hash.
type fileSink struct {
	f     *os.File
	h     *hashing.Writer
	limit int64
}

func (s *fileSink) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	_, _ = s.h.Write(p[:n])
	return n, err
}

// Reset discards what an attempt wrote, for the next one.
func (s *fileSink) Reset() error {
	s.h = hashing.NewWriter()
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

// Limit is the most the archive may hold.
func (s *fileSink) Limit() int64 { return s.limit }

// guarded returns a copy of c whose redirects go only where a location
// could (https, or http to loopback; for a location a registry named,
// only where the location rule lets it send the fetch) and carry no
// credentials once they have left the first request's origin; then c's
// own policy applies.
func guarded(c *http.Client) *http.Client {
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		httpx.DropCredentials(req, via)
		if err := checkTransport(req.URL, false); err != nil {
			return fmt.Errorf("refused the redirect to %s: %w", httpx.Redact(req.URL), err)
		}
		if err := httpx.CheckRedirectLocation(req); err != nil {
			return err
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
