package fakeregistry

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/regproto"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// Documents of the registry protocol, fields in the order served.
// The protocol's documents, shared with the client.
type (
	versionsDoc   = regproto.Versions
	versionEntry  = regproto.Version
	platformEntry = regproto.Platform
	downloadDoc   = regproto.Download
	signingKeys   = regproto.SigningKeys
	gpgKey        = regproto.GPGKey
)

// response is a body ready to be written.
type response struct {
	status      int // 0 is 200
	contentType string
	body        []byte
	archive     bool        // a provider archive: written with SetArchiveDelay and OnBytes
	header      http.Header // more headers (X-Terraform-Get), sent with any status
}

// chunkSize is how much of a body is written (and flushed) at a time.
const chunkSize = 16 << 10

// faultKey is the request context key of the transport fault to apply.
type faultKey struct{}

// start serves the registry over TLS and returns its URL. When the test
// ends, handlers still writing or sleeping are stopped and the server closed.
func (r *Registry) start(t testing.TB, ca *testca.CA) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(r.handler())
	srv.TLS = ca.TLSConfig(t, "localhost", "127.0.0.1", UnresolvableHost, UnresolvableSubdomain)
	srv.StartTLS()
	t.Cleanup(func() {
		close(r.done)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// handler records every request, applies the transport fault that answers
// instead of the registry, and otherwise routes it.
func (r *Registry) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DiscoveryPath, r.serve(r.discovery))
	mux.HandleFunc("GET /v1/providers/{ns}/{type}/versions", r.serve(r.versions))
	mux.HandleFunc("GET /v1/providers/{ns}/{type}/{version}/download/{os}/{arch}", r.serve(r.download))
	mux.HandleFunc("GET /releases/{ns}/{type}/{version}/{file}", r.serve(r.release))
	r.routeModules(mux)
	mux.HandleFunc("/", r.serve(func(*http.Request) *response { return nil }))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.record(req)
		f := r.take(req.URL.Path)
		switch f.kind {
		case failStatus:
			if f.retryAfter != "" {
				w.Header().Set("Retry-After", f.retryAfter)
			}
			body := fmt.Sprintf("fakeregistry: injected %d %s\n", f.status, http.StatusText(f.status))
			r.deliver(w, req, &response{status: f.status, contentType: textPlain, body: []byte(body)}, pathFault{})
		case redirectLoop:
			w.Header().Set("Location", req.URL.RequestURI())
			body := []byte("fakeregistry: redirect loop\n")
			r.deliver(w, req, &response{status: http.StatusFound, contentType: textPlain, body: body}, pathFault{})
		case endlessJSON:
			r.endless(w, req)
		case redirectTo:
			w.Header().Set("Location", f.location)
			body := []byte("fakeregistry: redirect\n")
			r.deliver(w, req, &response{status: http.StatusFound, contentType: textPlain, body: body}, pathFault{})
		default:
			mux.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), faultKey{}, f)))
		}
	})
}

const textPlain = "text/plain; charset=utf-8"

func (r *Registry) record(req *http.Request) {
	scheme := "https"
	if req.TLS == nil {
		scheme = "http"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
	r.log = append(r.log, Request{Method: req.Method, Scheme: scheme, Host: req.Host, Path: req.URL.Path, Authorization: req.Header.Get("Authorization")})
	r.counts[req.URL.Path]++
}

// serve turns a function that builds a response under the lock into a
// handler; a nil response is a 404.
func (r *Registry) serve(build func(*http.Request) *response) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		resp := build(req)
		r.mu.Unlock()
		if resp == nil {
			w.Header().Set("X-Content-Type-Options", "nosniff")
			resp = &response{status: http.StatusNotFound, contentType: textPlain, body: []byte("404 page not found\n")}
		}
		f, _ := req.Context().Value(faultKey{}).(pathFault)
		r.deliver(w, req, resp, f)
	}
}

// deliver writes resp, shaped by the transport fault f.
func (r *Registry) deliver(w http.ResponseWriter, req *http.Request, resp *response, f pathFault) {
	status := cmp.Or(resp.status, http.StatusOK)
	for k, vs := range resp.header {
		w.Header()[k] = vs
	}
	if !bodyAllowed(status) {
		w.WriteHeader(status)
		return
	}
	if status == http.StatusOK && resp.contentType == "application/zip" {
		resp, status = r.ranged(w, req, resp)
	}
	w.Header().Set("Content-Type", resp.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.body)))
	if f.kind == oversizeBody {
		w.Header().Del("Content-Length")
		if f.announce {
			w.Header().Set("Content-Length", strconv.FormatInt(f.size, 10))
		}
	}
	w.WriteHeader(status)
	if req.Method == http.MethodHead {
		return
	}
	body, half := resp.body, len(resp.body)/2
	switch f.kind {
	case resetMidBody:
		if r.write(w, req, resp, body[:half]) {
			r.reset(w)
		}
	case truncateBody:
		// The server closes the connection after a handler that wrote less
		// than its Content-Length.
		r.write(w, req, resp, body[:half])
	case stallBody:
		if r.write(w, req, resp, body[:half]) && flush(w) && r.sleep(req, f.stall) {
			r.write(w, req, resp, body[half:])
		}
	case dripBody:
		r.drip(w, req, resp, body, f.stall)
	case oversizeBody:
		r.oversize(w, req, resp, f.size)
	default:
		r.write(w, req, resp, body)
	}
}

// bodyAllowed reports whether a response with status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// write writes data in flushed chunks, accounting for them; archive
// responses pause for the archive delay between chunks (not after the last,
// which would hold up the next request on the connection). It reports
// whether all was written.
func (r *Registry) write(w http.ResponseWriter, req *http.Request, resp *response, data []byte) bool {
	for i := 0; len(data) > 0; i++ {
		if i > 0 && resp.archive && !r.sleep(req, r.archiveDelay()) {
			return false
		}
		chunk := data[:min(chunkSize, len(data))]
		n, err := w.Write(chunk)
		r.account(req.URL.Path, n, resp.archive)
		if err != nil || !flush(w) {
			return false
		}
		data = data[len(chunk):]
	}
	return true
}

// account counts n body bytes written for path, and calls the OnBytes hook
// for archives.
func (r *Registry) account(path string, n int, archive bool) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	r.served[path] += int64(n)
	var hook func(int64)
	var total int64
	if archive {
		r.archived += int64(n)
		hook, total = r.onBytes, r.archived
	}
	r.mu.Unlock()
	if hook != nil {
		hook(total)
	}
}

func (r *Registry) archiveDelay() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults.archiveDelay
}

// sleep waits for d, or less if the client goes away or the test ends; it
// reports whether it waited the whole time.
func (r *Registry) sleep(req *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-req.Context().Done():
	case <-r.done:
	}
	return false
}

func flush(w http.ResponseWriter) bool {
	return http.NewResponseController(w).Flush() == nil
}

// reset ends the connection under w abruptly: a TCP RST, without a TLS
// close_notify, so the client's read fails mid-body.
func (r *Registry) reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = raw.Close()
}

// endlessPrefix and endlessItem make up EndlessJSON's body.
const (
	endlessPrefix = `{"versions":[`
	endlessItem   = `{"version":"1.0.0"},`
)

// endless writes a JSON document that never ends until the client goes
// away or the test ends.
func (r *Registry) endless(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodHead {
		return
	}
	chunk := []byte(strings.Repeat(endlessItem, chunkSize/len(endlessItem)))
	resp := &response{contentType: "application/json"}
	if !r.write(w, req, resp, []byte(endlessPrefix)) {
		return
	}
	for {
		select {
		case <-req.Context().Done():
			return
		case <-r.done:
			return
		default:
		}
		if !r.write(w, req, resp, chunk) {
			return
		}
	}
}

func (r *Registry) discovery(*http.Request) *response {
	return jsonResponse(regproto.Discovery{regproto.ProvidersV1: cmp.Or(r.faults.serviceURL, "/v1/providers/"), regproto.ModulesV1: modulesPrefix})
}

func (r *Registry) versions(req *http.Request) *response {
	p := r.providers[req.PathValue("ns")+"/"+req.PathValue("type")]
	if p == nil {
		return nil
	}
	doc := versionsDoc{Versions: []versionEntry{}, Warnings: p.warnings}
	for _, v := range p.versions {
		doc.Versions = append(doc.Versions, versionEntry{
			Version:   v.name,
			Protocols: v.protocols,
			Platforms: platformEntries(v.platforms()),
		})
	}
	return jsonResponse(doc)
}

func platformEntries(platforms []string) []platformEntry {
	out := []platformEntry{}
	for _, p := range platforms {
		os, arch, _ := strings.Cut(p, "_")
		out = append(out, platformEntry{OS: os, Arch: arch})
	}
	return out
}

func (r *Registry) download(req *http.Request) *response {
	ns, typ, ver := req.PathValue("ns"), req.PathValue("type"), req.PathValue("version")
	goos, arch := req.PathValue("os"), req.PathValue("arch")
	platform := goos + "_" + arch
	v := r.version(ns, typ, ver, false)
	if v == nil || v.archives[platform] == nil {
		return nil
	}
	base := releasePath(ns, typ, ver)
	doc := downloadDoc{
		Protocols:           v.protocols,
		OS:                  goos,
		Arch:                arch,
		Filename:            zipName(typ, ver, platform),
		DownloadURL:         base + zipName(typ, ver, platform),
		ShasumsURL:          base + sumsName(typ, ver),
		ShasumsSignatureURL: base + sigName(typ, ver),
		Shasum:              sha256Hex(v.archives[platform]),
		SigningKeys:         r.signingKeys(v, versionKey(ns, typ, ver)),
	}
	if r.faults.mismatch[packageKey(ns, typ, ver, platform)] {
		doc.Shasum = sha256Hex([]byte("not " + doc.Shasum))
	}
	if name, ok := r.faults.filename[packageKey(ns, typ, ver, platform)]; ok {
		doc.Filename = name
	}
	r.hostileURLs(&doc, versionKey(ns, typ, ver))
	if r.faults.packages {
		return jsonResponse(withPackages(doc, v))
	}
	return jsonResponse(doc)
}

func (r *Registry) signingKeys(v *version, key string) signingKeys {
	switch {
	case r.faults.otherKey[key]:
		return signingKeys{GPGPublicKeys: []gpgKey{{KeyID: r.OtherKeyID, ASCIIArmor: r.OtherArmoredKey}}}
	case v.unsigned:
		return signingKeys{GPGPublicKeys: []gpgKey{}}
	case v.keys != nil:
		return signingKeys{GPGPublicKeys: v.keys}
	}
	return signingKeys{GPGPublicKeys: []gpgKey{{KeyID: r.KeyID, ASCIIArmor: r.ArmoredKey}}}
}

func (r *Registry) release(req *http.Request) *response {
	ns, typ, ver := req.PathValue("ns"), req.PathValue("type"), req.PathValue("version")
	v := r.version(ns, typ, ver, false)
	if v == nil {
		return nil
	}
	key := versionKey(ns, typ, ver)
	switch file := req.PathValue("file"); file {
	case sumsName(typ, ver):
		return &response{contentType: textPlain, body: r.servedSums(v, key, typ)}
	case sigName(typ, ver):
		return r.signature(v, key, typ)
	case manifestName(typ, ver):
		return &response{contentType: "application/json", body: []byte(manifest)}
	default:
		return r.archive(v, key, typ, file)
	}
}

// servedSums returns the version's SHA256SUMS as served: with the names
// PathTraversalFilename set instead of the archives' own.
func (r *Registry) servedSums(v *version, key, typ string) []byte {
	renamed := false
	for p := range v.archives {
		_, ok := r.faults.filename[key+"/"+p]
		renamed = renamed || ok
	}
	if !renamed {
		return v.sums
	}
	return shasumsNamed(typ, v.name, v.archives, func(platform string) string {
		if name, ok := r.faults.filename[key+"/"+platform]; ok {
			return name
		}
		return zipName(typ, v.name, platform)
	})
}

// signature serves the signature of the served SHA256SUMS: by the key the
// download documents advertise, or by the other one of the registry's two
// keys if the BadSignature fault is on.
func (r *Registry) signature(v *version, key, typ string) *response {
	sums := r.servedSums(v, key, typ)
	useOther := r.faults.otherKey[key] != r.faults.badSig[key]
	if !useOther && bytes.Equal(sums, v.sums) {
		return &response{contentType: "application/octet-stream", body: v.sig}
	}
	signer := r.signer
	if useOther {
		signer = r.other
	}
	cacheKey := keyID(signer) + " " + sha256Hex(sums)
	sig, ok := r.sigs[cacheKey]
	if !ok {
		var err error
		if sig, err = sign(signer, sums); err != nil {
			r.t.Errorf("fakeregistry: sign SHA256SUMS: %v", err)
			return nil
		}
		r.sigs[cacheKey] = sig
	}
	return &response{contentType: "application/octet-stream", body: sig}
}

// archive serves the zip named file, tampered if that fault is on.
func (r *Registry) archive(v *version, key, typ, file string) *response {
	for platform, data := range v.archives {
		if zipName(typ, v.name, platform) != file {
			continue
		}
		if r.faults.tampered[key+"/"+platform] {
			data = tamper(data)
		}
		return &response{contentType: "application/zip", body: data, archive: true}
	}
	return nil
}

func jsonResponse(v any) *response {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed, encodable types are marshalled
	}
	return &response{contentType: "application/json", body: body}
}

// ranged answers "Range: bytes=N-" on archives with 206 and the rest of
// the body, unless range support is off.
func (r *Registry) ranged(w http.ResponseWriter, req *http.Request, resp *response) (*response, int) {
	r.mu.Lock()
	off := r.noRanges
	r.mu.Unlock()
	var start int
	if off || req.Header.Get("Range") == "" {
		return resp, http.StatusOK
	}
	if _, err := fmt.Sscanf(req.Header.Get("Range"), "bytes=%d-", &start); err != nil || start < 0 || start >= len(resp.body) {
		return resp, http.StatusOK
	}
	r.mu.Lock()
	r.rangeRequests++
	r.mu.Unlock()
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(resp.body)-1, len(resp.body)))
	part := *resp
	part.body = resp.body[start:]
	return &part, http.StatusPartialContent
}
