// Package endpoint is the one opener of locations: it parses what a user
// names (Parse: a directory, an http(s):// mirror, s3://BUCKET/PREFIX/,
// oci://REPOSITORY_TEMPLATE, oci-layout://DIRECTORY, with near misses
// refused), and opens it as what a command needs, with the one settings
// value every command builds (package settings): a mirror to read
// (OpenMirror, OpenUpstream), a source of packages (OpenSource), a
// destination to publish into (OpenDestination), the origin registries
// (OpenRegistry) and the fetcher of module locations (OpenModuleFetcher).
// Every client it makes presents the same credentials, client
// certificates, CA and proxies, with the same time limits and retries,
// holds the URLs registries and mirrors choose to the same location rule
// (settings.Locations), and shares the run's one record of slow hosts
// (settings.Hosts), so a host given up on by one client is given up on
// by all.
//
// It owns naming and opening, nothing else: what is written and in which
// order is the tree's (package layout) or the registry's (ocistore); what
// is trusted is mirror's.
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/internal/fsmirror"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/modfetch"
	"github.com/tfmirror/tfmirror/internal/netmirror"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Settings is the value every opener takes.
type Settings = settings.Settings

// Mirror is a built mirror opened for reading: a tree (a directory, an
// http(s):// mirror, a bucket) or a registry (OCI).
type Mirror interface {
	mirror.Packages
	mirror.Listed
}

// OpenMirror opens a built mirror for reading. A directory must exist; a
// filesystem mirror's network tree is read from its private directory.
func OpenMirror(ctx context.Context, ref Ref, s Settings) (Mirror, error) {
	switch ref.Kind {
	case Dir:
		tree, err := layout.OpenExisting(layout.NetworkTreeOf(ref.Path))
		if err != nil {
			return nil, inputerr.Wrap(err)
		}
		return tree, nil
	case HTTP:
		client, err := mirrorClient(ref, s)
		if err != nil {
			return nil, err
		}
		return layout.NewTree(client), nil
	case S3:
		store, err := openS3(ctx, ref, s)
		if err != nil {
			return nil, err
		}
		return layout.NewTree(store), nil
	case OCI, OCILayout:
		return openOCI(ctx, ref, s)
	}
	return nil, inputerr.Wrap(fmt.Errorf("%s: %s cannot be read as a mirror", ref, ref.Kind))
}

// OpenUpstream opens a mirror as an upstream of a build or a lock: what
// it kept of each release's origin (a mirror tfmirror built), checked as
// the origin's, and where it may hold releases it keeps nothing of (a
// network or filesystem mirror another tool made, an OCI registry filled
// with oras), their hashes alone: those a network mirror lists, those of
// what a filesystem mirror holds, or the digests of a registry's
// archive/zip layers. hashed is nil for a mirror that vouches with
// provenance only (a bucket).
func OpenUpstream(ctx context.Context, name string, ref Ref, s Settings) (packages mirror.Packages, hashed *mirror.HashedSource, err error) {
	switch ref.Kind {
	case Dir:
		r, err := fsmirror.Open(ref.Path, s.ZipLimits)
		if err != nil {
			return nil, nil, inputerr.Wrap(err)
		}
		hashed = &mirror.HashedSource{Name: name, Upstream: r}
		kind := layout.ExistingKind(ref.Path)
		if kind == "" {
			return hashed.Packages(), hashed, nil
		}
		tree, err := layout.OpenExisting(layout.NetworkRoot(ref.Path, kind))
		if err != nil {
			return nil, nil, inputerr.Wrap(err)
		}
		return tree, hashed, nil
	case HTTP:
		client, err := mirrorClient(ref, s)
		if err != nil {
			return nil, nil, err
		}
		return layout.NewTree(client), &mirror.HashedSource{Name: name, Upstream: netmirror.NewHashed(client, s.Locations)}, nil
	case OCI, OCILayout:
		store, err := openOCI(ctx, ref, s)
		if err != nil {
			return nil, nil, err
		}
		return store, &mirror.HashedSource{Name: name, Upstream: ocistore.NewHashed(store, s.Net.MaxBodyBytes)}, nil
	}
	m, err := OpenMirror(ctx, ref, s)
	return m, nil, err
}

// OpenSource is where a build gets its packages: the origin registries;
// with from, a mirror already built (whose kept SHA256SUMS, signature and
// keys are checked as the origin's); or, with upstreams in the settings,
// each provider from the first upstream that takes it, as OpenTofu's
// provider_installation block routes it.
func OpenSource(ctx context.Context, from *Ref, s Settings) (mirror.Source, error) {
	if from != nil {
		packages, err := OpenMirror(ctx, *from, s)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		if tree, ok := packages.(*layout.Tree); ok {
			if err := RequireMirror(ctx, *from, tree); err != nil {
				return nil, fmt.Errorf("--from: %w", err)
			}
		}
		return &mirror.MirrorSource{Mirror: packages}, nil
	}
	if len(s.Upstreams) == 0 {
		return OpenRegistry(s)
	}
	routed := &mirror.RoutedSource{}
	for _, u := range s.Upstreams {
		route := mirror.Route{Name: u.Name(), Include: u.Include, Exclude: u.Exclude}
		if u.Kind == "direct" {
			client, err := OpenRegistry(s)
			if err != nil {
				return nil, err
			}
			route.Source = client
			routed.Routes = append(routed.Routes, route)
			continue
		}
		ref, err := Parse(u.Location)
		if err != nil {
			return nil, fmt.Errorf("provider_installation: %s: %w", u.Name(), err)
		}
		packages, hashed, err := OpenUpstream(ctx, u.Name(), ref, s)
		if err != nil {
			return nil, fmt.Errorf("provider_installation: %s: %w", u.Name(), err)
		}
		route.Source = &mirror.MirrorSource{Mirror: packages, Hashed: hashed}
		routed.Routes = append(routed.Routes, route)
	}
	return routed, nil
}

// OpenRegistry returns the client of the origin registries (providers.v1
// and modules.v1), with the settings' host blocks and credentials.
func OpenRegistry(s Settings) (*registry.Client, error) {
	transport, err := httpx.NewRoundTripper(s.HTTP(), s.Net)
	if err != nil {
		return nil, err
	}
	return registry.New(registry.Config{
		Fetcher:   fetcher(httpx.NewClient(transport, s.UserAgent, httpx.MaxRedirects, 0), s),
		Discovery: httpx.NewClient(transport, s.UserAgent, 3, 11*time.Second),
		Services:  s.Services,
		Tokens:    s.Tokens,
		Locations: s.Locations,
	}), nil
}

// fetcher is the Fetcher of every download and document a command reads
// over HTTP: the settings' policy, and the run's one record of slow hosts
// (settings.Hosts), so that a host written off by one client is written
// off for all.
func fetcher(c *http.Client, s Settings) *httpx.Fetcher {
	f := httpx.NewFetcher(c, s.Net)
	f.Hosts = s.Hosts
	return f
}

// OpenModuleFetcher returns the fetcher of module locations (https
// archives and git): the same TLS trust, client certificates and proxies
// as every other client, and the registries' credentials, each only for
// its own host, and to a location another registry names only as the
// settings' location rule says.
func OpenModuleFetcher(s Settings) (*modfetch.Fetcher, error) {
	httpEnv := s.HTTP()
	transport, err := httpx.NewRoundTripper(httpEnv, s.Net)
	if err != nil {
		return nil, err
	}
	return modfetch.New(modfetch.Config{
		HTTP: httpx.NewClient(transport, s.UserAgent, httpx.MaxRedirects, 0),
		// git presents what the archives' transport presents
		ClientCertificates: httpEnv.ClientCertificates,
		Environ:            s.Env.List(),
		Credentials: func(host string) (string, bool) {
			h, err := svchost.ForComparison(host)
			if token, ok := s.Tokens[h]; err == nil && ok {
				return "Bearer " + token, true
			}
			return "", false
		},
		MaxDownloadBytes: s.Net.MaxBodyBytes,
		Limits:           s.ModuleLimits,
		Net:              s.Net,
		Locations:        s.Locations,
	}), nil
}

// mirrorClient reads a published mirror. Requests have no overall time
// limit (archives can be large); the policy's timeouts catch stalls.
func mirrorClient(ref Ref, s Settings) (*netmirror.Client, error) {
	if u, err := url.Parse(ref.Raw); err != nil || u.Host == "" {
		return nil, inputerr.Wrap(fmt.Errorf("%s: not a URL with a host", ref))
	}
	transport, err := httpx.NewRoundTripper(s.HTTP(), s.Net)
	if err != nil {
		return nil, err
	}
	client, err := netmirror.New(ref.Raw, fetcher(httpx.NewClient(transport, s.UserAgent, httpx.MaxRedirects, 0), s))
	if err != nil {
		return nil, inputerr.Wrap(err)
	}
	return client, nil
}

func openS3(ctx context.Context, ref Ref, s Settings) (*s3store.Store, error) {
	if _, _, err := s3store.ParseURI(ref.Raw); err != nil {
		return nil, inputerr.Wrap(err)
	}
	store, err := s3store.New(ctx, ref.Raw, s3store.Config{ // the store's errors name the bucket
		Environ: s.Env.List(), Net: s.Net,
		MaxListObjects: s.Lists.MaxObjects, MaxListPages: s.Lists.MaxPages,
	})
	if errors.Is(err, s3store.ErrConfig) {
		return nil, inputerr.Wrap(err) // an endpoint, credentials or CA file that cannot be used
	}
	return store, err
}

func openOCI(ctx context.Context, ref Ref, s Settings) (*ocistore.Store, error) {
	store, err := ocistore.New(ctx, ref.Raw, ocistore.Config{
		Environ: s.Env.List(), UserAgent: s.UserAgent, Parallel: s.Parallel, ClientCertificates: s.ClientCertificates,
		Retries: s.Net.Retries, MinBackoff: s.Net.MinBackoff, MaxBackoff: s.Net.MaxBackoff,
		ConnectTimeout: s.Net.ConnectTimeout, HeaderTimeout: s.Net.HeaderTimeout,
		TokenRealms:  s.OCITokenRealms,
		StallTimeout: s.Net.StallTimeout, SpeedLimit: s.Net.SpeedLimit, SpeedTime: s.Net.SpeedTime,
		MaxTags: s.Lists.MaxTags, MaxListPages: s.Lists.MaxPages,
	})
	if err != nil {
		return nil, inputerr.Wrap(err) // a template or layout path that cannot be used
	}
	return store, nil
}

// Check opens nothing but reads what opening needs from the local disk,
// so a command can refuse early what would fail at the first request:
// the CA file of the environment, and every upstream's location.
func Check(s Settings) error {
	if _, err := httpx.NewTransport(s.HTTP(), s.Net); err != nil {
		return inputerr.Wrap(fmt.Errorf("SSL_CERT_FILE: %w", err))
	}
	for _, u := range s.Upstreams {
		if u.Location == "" {
			continue
		}
		if _, err := Parse(u.Location); err != nil {
			return fmt.Errorf("provider_installation: %s: %w", u.Name(), err)
		}
	}
	return nil
}
