package fakeregistry

import (
	"net/http"
	"net/http/httptest"
	"time"
)

// Request is what the registry saw of one request.
type Request struct {
	Method        string
	Scheme        string // "https", or "http" for requests to PlainURL
	Host          string // the Host header, as the client sent it
	Path          string
	Authorization string // the Authorization header, "" when absent
}

// RequestLog returns every request served so far, in order, with its
// scheme, host and Authorization header: what a test needs to tell where
// a token went.
func (r *Registry) RequestLog() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.log...)
}

// PlainURL returns "http://127.0.0.1:PORT": a plain HTTP listener, started
// on the first call, that serves the same registry and faults as URL and
// logs its requests with Scheme "http". It closes when the test ends.
func (r *Registry) PlainURL() string {
	r.plainOnce.Do(func() {
		srv := httptest.NewServer(r.handler())
		r.t.Cleanup(func() {
			srv.CloseClientConnections()
			srv.Close()
		})
		r.plainURL = srv.URL
	})
	return r.plainURL
}

// Redirect makes every later request to path get 302 Found with Location:
// location (absolute, say to PlainURL or another host, or relative), until
// Reset.
func (r *Registry) Redirect(path, location string) {
	r.standFault(path, pathFault{kind: redirectTo, location: location})
}

// SetServiceURL makes the discovery document name u as the providers.v1
// URL (say PlainURL()+"/v1/providers/"), until Reset.
func (r *Registry) SetServiceURL(u string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.serviceURL = u
}

// PlainHTTPDownloads makes the version's download documents give
// download_url, shasums_url and shasums_signature_url as absolute URLs on
// PlainURL (plain http, same files), until Reset.
func (r *Registry) PlainHTTPDownloads(namespace, typ, version string) {
	r.PlainURL()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.plain[versionKey(namespace, typ, version)] = true
}

// PresignDownloads makes the version's download documents add "?"+query
// to download_url, shasums_url and shasums_signature_url, as presigned
// URLs of object stores do (say "X-Amz-Signature=..."). The files are
// served as before: the query is ignored. Until Reset.
func (r *Registry) PresignDownloads(namespace, typ, version, query string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.query[versionKey(namespace, typ, version)] = query
}

// AnnouncePackages makes download documents carry OpenTofu 1.12's
// "packages" field: for every platform of the version, its zh: hash and
// its archive's size (package_size), until Reset.
func (r *Registry) AnnouncePackages() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.packages = true
}

// Drip makes the next n requests to path get the normal status and
// headers (the full Content-Length), then the body one byte at a time,
// one byte every every: each byte arrives well within any stall timeout,
// and the whole takes len(body) × every. It ends early when the client
// goes away or the test ends.
func (r *Registry) Drip(path string, n int, every time.Duration) {
	r.queue(path, &pathFault{kind: dripBody, left: n, stall: every})
}

// Oversize makes the next n requests to path get the normal status and
// body, followed by zero bytes up to size bytes in all (say gigabytes for
// a 236-byte zip), streamed in chunks. With announce, the Content-Length
// says size; without, the body is chunked. BytesServed tells how much a
// client read before it hung up.
func (r *Registry) Oversize(path string, n int, size int64, announce bool) {
	r.queue(path, &pathFault{kind: oversizeBody, left: n, size: size, announce: announce})
}

// drip writes body one byte every every; see Drip.
func (r *Registry) drip(w http.ResponseWriter, req *http.Request, resp *response, body []byte, every time.Duration) {
	for i := range body {
		if i > 0 && !r.sleep(req, every) {
			return
		}
		if !r.write(w, req, resp, body[i:i+1]) {
			return
		}
	}
}

// oversize writes resp's body, then zeros up to size bytes; see Oversize.
func (r *Registry) oversize(w http.ResponseWriter, req *http.Request, resp *response, size int64) {
	if !r.write(w, req, resp, resp.body) {
		return
	}
	for left := size - int64(len(resp.body)); left > 0; {
		n := min(left, int64(len(zeros)))
		if !r.write(w, req, resp, zeros[:n]) {
			return
		}
		left -= n
	}
}

// hostileURLs applies PlainHTTPDownloads and PresignDownloads to a
// download document of the version key. The caller holds r.mu.
func (r *Registry) hostileURLs(doc *downloadDoc, key string) {
	for _, u := range []*string{&doc.DownloadURL, &doc.ShasumsURL, &doc.ShasumsSignatureURL} {
		if r.faults.plain[key] {
			*u = r.plainURL + *u
		}
		if q, ok := r.faults.query[key]; ok {
			*u += "?" + q
		}
	}
}

// downloadWithPackages is a download document with OpenTofu 1.12's
// "packages" field.
type downloadWithPackages struct {
	downloadDoc
	Packages map[string]packageInfo `json:"packages"`
}

type packageInfo struct {
	Hashes      []string `json:"hashes"`
	PackageSize int      `json:"package_size"`
}

// withPackages adds the "packages" field of version v to doc.
func withPackages(doc downloadDoc, v *version) downloadWithPackages {
	out := downloadWithPackages{downloadDoc: doc, Packages: map[string]packageInfo{}}
	for platform, zip := range v.archives {
		out.Packages[platform] = packageInfo{Hashes: []string{"zh:" + sha256Hex(zip)}, PackageSize: len(zip)}
	}
	return out
}
