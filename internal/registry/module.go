package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/mirror"
)

// ErrModuleUnknown means the registry does not know a module package: it
// answered its versions request with 404 Not Found, or with a list that
// names no module.
var ErrModuleUnknown = mirror.ErrModuleUnknown

// ModuleVersions lists the versions the module's registry offers: service
// discovery of modules.v1 on m.Host, then GET
// <base>/<namespace>/<name>/<system>/versions. Like OpenTofu, it reads the
// first module of the answer and skips version strings that do not parse.
// A 404 answer, or one that lists no module, is an error wrapping
// ErrModuleUnknown.
func (c *Client) ModuleVersions(ctx context.Context, m addrs.Module) (addrs.VersionList, error) {
	u, err := c.moduleURL(ctx, m, "versions")
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", m, err)
	}
	data, final, err := c.apiGet(ctx, m.Host, u, maxVersionsBytes)
	if isNotFound(err) {
		return nil, fmt.Errorf("module %s: %s answered 404 Not Found: %w", m, httpx.Redact(u), ErrModuleUnknown)
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: list versions: %w", m, err)
	}
	list, err := parseModuleVersions(data)
	if err != nil {
		return nil, fmt.Errorf("module %s: parse versions list from %s: %w", m, httpx.Redact(final), err)
	}
	return list, nil
}

// parseModuleVersions parses a module versions document
// (regproto.ModuleVersions), of at most maxModules modules of at most
// maxVersions versions each.
func parseModuleVersions(data []byte) (addrs.VersionList, error) {
	doc := newModuleVersions()
	if err := decodeJSON(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Modules.items) == 0 {
		return nil, fmt.Errorf("it lists no module: %w", ErrModuleUnknown)
	}
	list := addrs.VersionList{}
	for _, entry := range doc.Modules.items[0].Versions.items {
		// OpenTofu warns about an invalid version and ignores it.
		if v, err := addrs.ParseVersion(entry.Version); err == nil {
			list = append(list, v)
		}
	}
	return list, nil
}

// ModuleLocation asks the module's registry where version v can be
// downloaded (GET <base>/<namespace>/<name>/<system>/<version>/download)
// and returns the go-getter location it gives: the JSON body's "location",
// or else the X-Terraform-Get header, on a 200 answer with a JSON body or
// on a 204 answer. As in OpenTofu, a location that begins with "/", "./"
// or "../" is resolved against the download URL into an absolute URL;
// any other is returned as written. No location is an error.
//
// The location comes with who named it: m's registry host, and the
// download URL that answered. The fetcher holds the location to the
// location rule (httpx.Locations) with that registry as its namer.
func (c *Client) ModuleLocation(ctx context.Context, m addrs.Module, v addrs.Version) (mirror.ModuleLocation, error) {
	u, err := c.moduleURL(ctx, m, v.String(), "download")
	if err != nil {
		return mirror.ModuleLocation{}, fmt.Errorf("module %s version %s: %w", m, v, err)
	}
	ans := &downloadAnswer{}
	data, _, err := c.apiGetWith(context.WithValue(ctx, downloadAnswerKey{}, ans), c.locAPI, m.Host, u, maxDownloadBytes)
	if err != nil {
		return mirror.ModuleLocation{}, fmt.Errorf("module %s version %s: get download location: %w", m, v, err)
	}
	loc, err := ans.location(data)
	if err == nil {
		loc, err = resolveLocation(u, loc)
	}
	if err != nil {
		return mirror.ModuleLocation{}, fmt.Errorf("module %s version %s: download answer from %s: %w", m, v, httpx.Redact(u), err)
	}
	return mirror.ModuleLocation{Location: loc, Registry: m.Host, NamedAt: u.String()}, nil
}

// moduleURL discovers m's module registry and returns the URL of the
// endpoint below m's own path, say "versions".
func (c *Client) moduleURL(ctx context.Context, m addrs.Module, endpoint ...string) (*url.URL, error) {
	for _, part := range []string{m.Namespace, m.Name, m.TargetSystem} {
		if !validModulePart(part) {
			return nil, fmt.Errorf("invalid module address part %q", part)
		}
	}
	base, err := c.discover(ctx, m.Host, moduleService)
	if err != nil {
		return nil, err
	}
	parts := append([]string{m.Namespace, m.Name, m.TargetSystem}, endpoint...)
	return base.ResolveReference(&url.URL{Path: strings.Join(parts, "/")}), nil
}

// validModulePart reports whether a namespace, name or target system is
// safe to put in a URL path as it is: ASCII letters, digits, "-" and "_"
// (what module registry addresses allow).
func validModulePart(s string) bool {
	if s == "" {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

// resolveLocation resolves a location that looks like a relative URL
// against the download URL, as OpenTofu does; a go-getter location is not
// a URL, so any other is kept as written.
func resolveLocation(download *url.URL, loc string) (string, error) {
	if !strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "./") && !strings.HasPrefix(loc, "../") {
		return loc, nil
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("invalid relative location: %w", httpx.UnwrapURLError(err))
	}
	return download.ResolveReference(ref).String(), nil
}

// downloadAnswer is what the last response to a module download request
// said besides its body: its status and its X-Terraform-Get header.
type downloadAnswer struct {
	status int
	header string
}

// downloadAnswerKey is the request context key of the *downloadAnswer
// that locationTransport fills in.
type downloadAnswerKey struct{}

// location is the location the answer gives: the JSON body's on a 200,
// else the header's.
func (a *downloadAnswer) location(body []byte) (string, error) {
	loc := a.header
	if a.status == http.StatusOK {
		var doc regproto.ModuleDownload
		if err := decodeJSON(body, &doc); err != nil {
			return "", fmt.Errorf("parse JSON body: %w", err)
		}
		if doc.Location != "" {
			loc = doc.Location
		}
	}
	if loc == "" {
		return "", fmt.Errorf("no location: the answer has neither a \"location\" nor an %s header", regproto.LocationHeader)
	}
	return loc, nil
}

// locationFetcher returns an https-only copy of f whose requests with a
// *downloadAnswer in their context record the status and X-Terraform-Get
// header of their final response, and see a 204 answer as an empty 200
// one: the fetcher reads 200 answers only, and a module registry may
// answer a download request with 204 and the header.
func locationFetcher(f *httpx.Fetcher) *httpx.Fetcher {
	base := f.Client
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = locationTransport{next: next}
	lf := httpx.NewFetcher(&c, f.Policy)
	lf.Hosts = f.Hosts
	return lf.HTTPSOnly()
}

// locationTransport is the transport of locationFetcher. Every response,
// redirects included, passes through it in the requesting goroutine, so
// the last one recorded is the final one.
type locationTransport struct{ next http.RoundTripper }

func (t locationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	ans, ok := req.Context().Value(downloadAnswerKey{}).(*downloadAnswer)
	if err != nil || !ok {
		return resp, err
	}
	ans.status, ans.header = resp.StatusCode, resp.Header.Get(regproto.LocationHeader)
	if resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK (was 204 No Content)"
		resp.Body, resp.ContentLength = http.NoBody, 0
	}
	return resp, nil
}
