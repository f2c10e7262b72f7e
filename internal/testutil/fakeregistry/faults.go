package fakeregistry

import (
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/regproto"
)

// DiscoveryPath is the URL path of the service discovery document.
const DiscoveryPath = regproto.DiscoveryPath

// VersionsPath is the URL path of a provider's version listing.
func VersionsPath(namespace, typ string) string {
	return "/v1/providers/" + namespace + "/" + typ + "/versions"
}

// DownloadDocPath is the URL path of a package's download document;
// platform is "os_arch".
func DownloadDocPath(namespace, typ, version, platform string) string {
	goos, arch, _ := strings.Cut(platform, "_")
	return "/v1/providers/" + namespace + "/" + typ + "/" + version + "/download/" + goos + "/" + arch
}

// ArchivePath is the URL path of a package's zip archive (its download_url,
// resolved against the registry).
func ArchivePath(namespace, typ, version, platform string) string {
	return releasePath(namespace, typ, version) + zipName(typ, version, platform)
}

// SumsPath is the URL path of a version's SHA256SUMS document.
func SumsPath(namespace, typ, version string) string {
	return releasePath(namespace, typ, version) + sumsName(typ, version)
}

// SignaturePath is the URL path of a version's SHA256SUMS.sig.
func SignaturePath(namespace, typ, version string) string {
	return releasePath(namespace, typ, version) + sigName(typ, version)
}

// releasePath is the URL path of the folder of a version's release files.
func releasePath(namespace, typ, version string) string {
	return "/releases/" + namespace + "/" + typ + "/" + version + "/"
}

// faultKind is what a transport fault does to a request.
type faultKind int

const (
	serveNormally faultKind = iota
	failStatus              // FailTimes and RateLimit
	resetMidBody            // ResetMidBody
	truncateBody            // Truncate
	stallBody               // Stall
	redirectLoop            // RedirectLoop
	endlessJSON             // EndlessJSON
	redirectTo              // Redirect
	dripBody                // Drip
	oversizeBody            // Oversize
)

// pathFault is a transport fault for the next left requests to a path.
type pathFault struct {
	kind       faultKind
	left       int
	status     int           // failStatus
	retryAfter string        // failStatus; Retry-After header if set
	stall      time.Duration // stallBody; dripBody: the pause between bytes
	location   string        // redirectTo
	size       int64         // oversizeBody: the body's length
	announce   bool          // oversizeBody: with a Content-Length
}

// FailTimes makes the next n requests whose URL path equals path get
// status (an error status, 200 or above) with a short text body, then
// normal service.
func (r *Registry) FailTimes(path string, status, n int) {
	r.queue(path, &pathFault{kind: failStatus, left: n, status: status})
}

// RateLimit makes the next n requests to path get 429 Too Many Requests
// with "Retry-After: <retryAfter>" (seconds or an HTTP date).
func (r *Registry) RateLimit(path string, n int, retryAfter string) {
	r.queue(path, &pathFault{kind: failStatus, left: n, status: 429, retryAfter: retryAfter})
}

// ResetMidBody makes the next n requests to path get the normal status and
// headers (the full Content-Length), the first half of the body, and then
// a TCP reset: the client's read fails with "connection reset by peer" (or
// an unexpected EOF).
func (r *Registry) ResetMidBody(path string, n int) {
	r.queue(path, &pathFault{kind: resetMidBody, left: n})
}

// Truncate makes the next n requests to path get the full Content-Length
// but only the first half of the body; then the server ends the response
// and closes the connection cleanly, so the client reads an unexpected EOF.
func (r *Registry) Truncate(path string, n int) {
	r.queue(path, &pathFault{kind: truncateBody, left: n})
}

// Stall makes the next n requests to path get the first half of the body
// (flushed), then nothing for d, then the rest. The pause ends early when
// the client goes away or the test ends.
func (r *Registry) Stall(path string, n int, d time.Duration) {
	r.queue(path, &pathFault{kind: stallBody, left: n, stall: d})
}

// RedirectLoop makes every later request to path get 302 Found with
// Location: path (and the request's query), until Reset.
func (r *Registry) RedirectLoop(path string) {
	r.stand(path, redirectLoop)
}

// EndlessJSON makes every later request to path get 200 application/json
// with a body that never ends: `{"versions":[` followed by
// `{"version":"1.0.0"},` repeated, until the client goes away or the test
// ends. It lasts until Reset.
func (r *Registry) EndlessJSON(path string) {
	r.stand(path, endlessJSON)
}

// SignWithAdvertisedKey makes later download documents of the version
// advertise OtherKeyID/OtherArmoredKey (instead of the registry key, or no
// key with Options.Unsigned), and its SHA256SUMS.sig be made with that key:
// verification succeeds, by a key other than KeyID.
func (r *Registry) SignWithAdvertisedKey(namespace, typ, version string) {
	r.setFault(func(f *faults) map[string]bool { return f.otherKey }, versionKey(namespace, typ, version))
}

// PathTraversalFilename makes later download documents of the package carry
// filename as their `filename` field (say "../../evil.zip", "/etc/passwd",
// "a/b.zip" or `..\x.zip`), and the version's SHA256SUMS list the package's
// archive under that name instead of its own (then signed as usual), so
// only a check of the filename can catch it. download_url is unchanged.
func (r *Registry) PathTraversalFilename(namespace, typ, version, platform, filename string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.filename[packageKey(namespace, typ, version, platform)] = filename
}

// SetArchiveDelay makes archive responses pause for d between the chunks
// (16 KiB, each flushed) they write; 0 turns it off. It applies to
// responses under way; a pause ends early when the client goes away.
func (r *Registry) SetArchiveDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.archiveDelay = d
}

// OnBytes sets a hook called after each chunk written to any archive
// response, with the running total of archive body bytes served by the
// registry. It is called from the handler's goroutine, without the
// registry's lock held (so it may call the registry); concurrent downloads
// call it concurrently. nil removes it. Reset keeps it.
func (r *Registry) OnBytes(hook func(total int64)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onBytes = hook
}

// RequestCount returns how many requests with that URL path were served so
// far (any method, faulted or not).
func (r *Registry) RequestCount(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[path]
}

// BytesServed returns how many response body bytes were written for
// requests with that URL path so far, over all of them, including partial
// and error bodies.
func (r *Registry) BytesServed(path string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served[path]
}

// queue adds a counted fault behind the path's earlier ones.
func (r *Registry) queue(path string, f *pathFault) {
	if f.left <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.queued[path] = append(r.faults.queued[path], f)
}

// stand sets the path's standing fault.
func (r *Registry) stand(path string, kind faultKind) {
	r.standFault(path, pathFault{kind: kind})
}

// standFault sets the path's standing fault, with its parameters.
func (r *Registry) standFault(path string, f pathFault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults.standing[path] = f
}

// take returns the transport fault for a request to path, using up one
// turn of the first counted fault queued, else the standing one.
func (r *Registry) take(path string) pathFault {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.faults.queued[path]
	if len(q) == 0 {
		return r.faults.standing[path]
	}
	f := *q[0]
	if q[0].left--; q[0].left == 0 {
		q = q[1:]
	}
	if len(q) == 0 {
		delete(r.faults.queued, path)
	} else {
		r.faults.queued[path] = q
	}
	return f
}
