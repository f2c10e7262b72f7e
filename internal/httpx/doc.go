// Package httpx builds the one kind of HTTP client tfmirror uses to talk to
// origins: proxy settings from HTTPS_PROXY/NO_PROXY, the system CA store
// (SSL_CERT_FILE and SSL_CERT_DIR on Unix), connect and header timeouts, a
// User-Agent, a redirect cap that drops credentials on a redirect to
// another origin (HTTPSOnlyClient also refuses plain http), size-limited
// reads and errors that name the URL as Redact shows it (no credentials,
// no signatures of presigned URLs). Its Fetcher retries what may go away
// (dropped connections, timeouts, stalled, too slow or short bodies, 429
// and 5xx) with exponential backoff, as a Policy says, and caps what one
// download may bring (Policy.MaxBodyBytes, LimitedSink).
//
// Retries learn about hosts: a run's Fetchers share one Hosts, and a host
// whose transfers were too slow or stalled SlowHostStrikes (3) times in a
// row is given up on for the rest of the run, every later request to it
// failing at once with a *HostError naming it.
//
// It owns the location rule (Locations): where a server may send
// tfmirror when it chooses a URL for it (a registry's download location,
// a mirror's archive URL), and which hosts' credentials such a URL may
// carry. Its callers say who named each URL (Namer) and check it
// (Locations.Check) before fetching it under WithLocation, which holds
// its redirects and client certificates to the rule too.
//
// Every read from outside has the same time bounds, whatever client makes
// it: connect and header timeouts (NewTransport), and the stall and speed
// limits on every body, the Fetcher's own, and WatchTransport's (or
// Watch's) for the clients the Fetcher does not send for (the S3 SDK's,
// oras's). A server's status line appears in errors bounded and escaped
// (package excerpt), as every quote of outside text does.
//
// It knows nothing about registries or mirrors.
package httpx
