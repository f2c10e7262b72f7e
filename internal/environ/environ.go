// Package environ reads settings from a process environment handed over as
// a list in os.Environ's form, so that adapters take their environment
// from the caller (and tests can give them one) instead of reading the
// process's behind its back. It owns the parsing and the proxy variables;
// what each setting means is its adapter's.
package environ

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// Env is an environment by variable name; of duplicated names the last
// wins, as in a process.
type Env map[string]string

// Parse reads "NAME=value" entries; entries without a name are ignored.
func Parse(kv []string) Env {
	env := Env{}
	for _, e := range kv {
		if k, v, ok := strings.Cut(e, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// First returns the value of the first of keys set to a non-empty value.
func (e Env) First(keys ...string) string {
	for _, k := range keys {
		if v := e[k]; v != "" {
			return v
		}
	}
	return ""
}

// List returns the environment in os.Environ's form, sorted by name: for
// a child process (git).
func (e Env) List() []string {
	out := make([]string, 0, len(e))
	for _, k := range slices.Sorted(maps.Keys(e)) {
		out = append(out, k+"="+e[k])
	}
	return out
}

// Proxy is the http.Transport proxy function of the environment's
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their lowercase forms), as
// curl and Go's http.ProxyFromEnvironment read them.
func (e Env) Proxy() func(*http.Request) (*url.URL, error) {
	proxy := (&httpproxy.Config{
		HTTPProxy:  e.First("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: e.First("HTTPS_PROXY", "https_proxy"),
		NoProxy:    e.First("NO_PROXY", "no_proxy"),
	}).ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return proxy(r.URL) }
}
