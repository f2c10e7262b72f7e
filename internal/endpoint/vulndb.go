package endpoint

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/vulndb"
)

// OpenVulnDB opens the Go vulnerability database at location: a directory
// of OSV records (golang.org/x/vulndb's data/osv, or the layout
// vuln.go.dev serves), an OSV zip, or an https:// URL serving the
// vuln.go.dev layout, read through the settings' fetcher (its time
// bounds, retries, CA and proxies). Every failure is bad input naming the
// location, without credentials.
func OpenVulnDB(ctx context.Context, location string, s Settings) (vulndb.Matcher, error) {
	ref, err := Parse(location)
	if err != nil {
		return nil, fmt.Errorf("--vulndb: %w", err)
	}
	switch ref.Kind {
	case Dir:
		db, err := vulndb.Load(ref.Path)
		if err != nil {
			return nil, inputerr.Wrap(err)
		}
		return vulndb.Offline{DB: db, Where: ref.Path}, nil
	case HTTP:
		if !strings.HasPrefix(strings.ToLower(ref.Raw), "https://") {
			shown := "the URL"
			if u, err := url.Parse(ref.Raw); err == nil {
				shown = httpx.Redact(u)
			}
			return nil, inputerr.Wrap(fmt.Errorf("--vulndb %s: a served database is read over https:// only", shown))
		}
		transport, err := httpx.NewRoundTripper(s.HTTP(), s.Net)
		if err != nil {
			return nil, err
		}
		r, err := vulndb.OpenRemote(ctx, ref.Raw, fetcher(httpx.NewClient(transport, s.UserAgent, httpx.MaxRedirects, 0), s))
		if err != nil {
			return nil, inputerr.Wrap(err)
		}
		return r, nil
	}
	return nil, inputerr.Wrap(fmt.Errorf("--vulndb %s: the database is a directory, an OSV zip or an https:// URL, not %s", ref, ref.Kind))
}
