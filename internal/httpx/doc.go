// Package httpx builds the one kind of HTTP client tfmirror uses to talk to
// origins: proxy settings from HTTPS_PROXY/NO_PROXY, the system CA store
// (SSL_CERT_FILE and SSL_CERT_DIR on Unix), connect and header timeouts, a
// User-Agent, a redirect cap, size-limited reads and errors that name the
// URL without credentials. Its Fetcher retries what may go away (dropped
// connections, timeouts, stalled or short bodies, 429 and 5xx) with
// exponential backoff, as a Policy says.
//
// It knows nothing about registries or mirrors.
package httpx
