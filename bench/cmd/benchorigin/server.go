package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfmirror/tfmirror/internal/regproto"
)

// Documents of the provider registry protocol v1.
// The protocol's documents, shared with tfmirror's client.
type (
	versionsDoc   = regproto.Versions
	versionEntry  = regproto.Version
	platformEntry = regproto.Platform
	downloadDoc   = regproto.Download
	signingKeys   = regproto.SigningKeys
	gpgKey        = regproto.GPGKey
)

// Stats counts what the origin served. /_stats returns it as JSON.
type Stats struct {
	Requests        int64 `json:"requests"`         // every request but /_stats
	ArchiveRequests int64 `json:"archive_requests"` // requests for a .zip
	RangeRequests   int64 `json:"range_requests"`   // of which with a Range header
	ArchiveBytes    int64 `json:"archive_bytes"`    // .zip body bytes written
	Bytes           int64 `json:"bytes"`            // all body bytes written
	// The requests by kind besides the archives: version lists, download
	// documents, SHA256SUMS and their signatures, and the rest (service
	// discovery, unknown paths).
	VersionsRequests int64 `json:"versions_requests"`
	DownloadRequests int64 `json:"download_requests"`
	SumsRequests     int64 `json:"sums_requests"`
	OtherRequests    int64 `json:"other_requests"`
}

// origin serves one corpus as a provider registry.
type origin struct {
	corpus *Corpus
	delay  time.Duration
	keys   signingKeys

	docs      map[string][]byte // URL path -> JSON document or small file
	files     map[string]string // URL path -> archive file on disk
	downloads map[string]int    // download document's URL path -> index in corpus.Packages

	requests, archiveRequests, rangeRequests, archiveBytes, bytes   atomic.Int64
	versionsRequests, downloadRequests, sumsRequests, otherRequests atomic.Int64
}

const protocolVersion = "5.0"

// newOrigin prepares what the origin serves: version lists, and each
// version's SHA256SUMS and its signature by s (or, when the corpus holds
// its own signatures, those: s is then the corpus's key). Download
// documents are made on request, so that a corpus of many packages costs
// no memory for them.
func newOrigin(c *Corpus, s *signer, delay time.Duration) (*origin, error) {
	o := &origin{
		corpus: c, delay: delay,
		keys: signingKeys{GPGPublicKeys: []gpgKey{{KeyID: s.KeyID, ASCIIArmor: s.Armored}}},
		docs: map[string][]byte{}, files: map[string]string{}, downloads: map[string]int{},
	}
	ns := c.Spec.Namespace

	var types []string                        // in corpus order
	versions := map[string][]string{}         // type -> versions
	platforms := map[string][]platformEntry{} // "type/version" -> platforms
	for i, p := range c.Packages {
		if _, ok := versions[p.Type]; !ok {
			types = append(types, p.Type)
		}
		vk := p.Type + "/" + p.Version
		if _, ok := platforms[vk]; !ok {
			versions[p.Type] = append(versions[p.Type], p.Version)
		}
		goos, arch, _ := strings.Cut(p.Platform, "_")
		platforms[vk] = append(platforms[vk], platformEntry{OS: goos, Arch: arch})
		o.downloads["/v1/providers/"+ns+"/"+p.Type+"/"+p.Version+"/download/"+goos+"/"+arch] = i
		o.files[releasePath(ns, p.Type, p.Version)+filepath.Base(p.File)] = filepath.Join(c.Dir, p.File)
	}
	for _, typ := range types {
		doc := versionsDoc{}
		for _, v := range versions[typ] {
			doc.Versions = append(doc.Versions, versionEntry{
				Version:   v,
				Protocols: []string{protocolVersion},
				Platforms: platforms[typ+"/"+v],
			})
		}
		if err := o.putJSON("/v1/providers/"+ns+"/"+typ+"/versions", doc); err != nil {
			return nil, err
		}
	}
	for k, rel := range c.Sums {
		typ, ver, _ := strings.Cut(k, "/")
		sums, err := os.ReadFile(filepath.Join(c.Dir, rel))
		if err != nil {
			return nil, err
		}
		var sig []byte
		if c.Sigs != nil {
			sig, err = os.ReadFile(filepath.Join(c.Dir, c.Sigs[k]))
		} else {
			sig, err = s.sign(sums)
		}
		if err != nil {
			return nil, err
		}
		base := releasePath(ns, typ, ver) + sumsName(typ, ver)
		o.docs[base] = sums
		o.docs[base+".sig"] = sig
	}
	o.docs["/.well-known/terraform.json"] = []byte(`{"providers.v1":"/v1/providers/"}`)
	return o, nil
}

// download returns the download document of the i-th package.
func (o *origin) download(i int) ([]byte, error) {
	p := o.corpus.Packages[i]
	goos, arch, _ := strings.Cut(p.Platform, "_")
	rel := releasePath(o.corpus.Spec.Namespace, p.Type, p.Version)
	name := filepath.Base(p.File)
	return json.Marshal(downloadDoc{
		Protocols:           []string{protocolVersion},
		OS:                  goos,
		Arch:                arch,
		Filename:            name,
		DownloadURL:         rel + name,
		ShasumsURL:          rel + sumsName(p.Type, p.Version),
		ShasumsSignatureURL: rel + sumsName(p.Type, p.Version) + ".sig",
		Shasum:              p.SHA256,
		SigningKeys:         o.keys,
	})
}

func releasePath(ns, typ, version string) string {
	return "/releases/" + ns + "/" + typ + "/" + version + "/"
}

func (o *origin) putJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.docs[path] = data
	return nil
}

func (o *origin) stats() Stats {
	return Stats{
		Requests:         o.requests.Load(),
		ArchiveRequests:  o.archiveRequests.Load(),
		RangeRequests:    o.rangeRequests.Load(),
		ArchiveBytes:     o.archiveBytes.Load(),
		Bytes:            o.bytes.Load(),
		VersionsRequests: o.versionsRequests.Load(),
		DownloadRequests: o.downloadRequests.Load(),
		SumsRequests:     o.sumsRequests.Load(),
		OtherRequests:    o.otherRequests.Load(),
	}
}

// ServeHTTP serves /_stats at once, and everything else after the
// profile's delay (the round trip and server time a remote registry or CDN
// adds before the response headers).
func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_stats" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(o.stats())
		return
	}
	o.requests.Add(1)
	if o.delay > 0 {
		t := time.NewTimer(o.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	cw := &countingResponse{ResponseWriter: w, n: &o.bytes}
	if path, ok := o.files[r.URL.Path]; ok {
		o.archiveRequests.Add(1)
		if r.Header.Get("Range") != "" {
			o.rangeRequests.Add(1)
		}
		cw.archive = &o.archiveBytes
		o.serveFile(cw, r, path)
		return
	}
	if i, ok := o.downloads[r.URL.Path]; ok {
		o.downloadRequests.Add(1)
		data, err := o.download(i)
		if err != nil {
			http.Error(cw, err.Error(), http.StatusInternalServerError)
			return
		}
		cw.Header().Set("Content-Type", "application/json")
		_, _ = cw.Write(data)
		return
	}
	data, ok := o.docs[r.URL.Path]
	switch {
	case !ok:
		o.otherRequests.Add(1)
		http.NotFound(cw, r)
		return
	case strings.HasSuffix(r.URL.Path, ".sig"):
		o.sumsRequests.Add(1)
		cw.Header().Set("Content-Type", "application/octet-stream")
	case strings.HasSuffix(r.URL.Path, "_SHA256SUMS"):
		o.sumsRequests.Add(1)
		cw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	case strings.HasSuffix(r.URL.Path, "/versions"):
		o.versionsRequests.Add(1)
		cw.Header().Set("Content-Type", "application/json")
	default:
		o.otherRequests.Add(1)
		cw.Header().Set("Content-Type", "application/json")
	}
	_, _ = cw.Write(data)
}

// serveFile serves an archive with http.ServeContent, which answers Range
// and If-Range requests (for resumed downloads) and sets Last-Modified.
func (o *origin) serveFile(w http.ResponseWriter, r *http.Request, path string) {
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, "archive unavailable", http.StatusInternalServerError)
		return
	}
	defer func() { _ = f.Close() }() // read only
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "archive unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// countingResponse counts the body bytes written.
type countingResponse struct {
	http.ResponseWriter
	n, archive *atomic.Int64
}

func (c *countingResponse) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	if c.archive != nil {
		c.archive.Add(int64(n))
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (c *countingResponse) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// pacedListener caps the rate at which every accepted connection sends, as
// a long-distance TCP connection is capped by its window and round trip:
// each connection gets its own budget, so parallel downloads add up.
type pacedListener struct {
	net.Listener
	rate float64 // bytes per second
}

func (l pacedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &pacedConn{Conn: c, rate: l.rate}, nil
}

// pacedConn is a token bucket on Write: it sends at most a burst (and one
// write) ahead of the ideal schedule of rate bytes per second. Once ahead
// by more than a burst it sleeps until it is on schedule, so that a
// connection pauses once per burst, not before every write: the origin
// shares the machine's cores with the client measured, and each pause is
// a wakeup it would spend their CPU on.
type pacedConn struct {
	net.Conn
	rate float64

	mu   sync.Mutex
	next time.Time // when the bytes sent so far are due at the capped rate
}

// pacingChunk is the largest write sent without pausing; pacingBurst is how
// far ahead of schedule a connection may get after a pause.
const (
	pacingChunk = 16 << 10
	pacingBurst = 64 << 10
)

func (c *pacedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	written := 0
	for len(b) > 0 {
		n := min(len(b), pacingChunk)
		c.wait(n)
		m, err := c.Conn.Write(b[:n])
		written += m
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// wait sleeps, when n more bytes put the connection more than a burst
// ahead of schedule, until they are due.
func (c *pacedConn) wait(n int) {
	now := time.Now()
	burst := time.Duration(float64(pacingBurst) / c.rate * float64(time.Second))
	if earliest := now.Add(-burst); c.next.Before(earliest) {
		c.next = earliest // an idle connection saves up at most a burst
	}
	c.next = c.next.Add(time.Duration(float64(n) / c.rate * float64(time.Second)))
	if d := c.next.Sub(now); d > burst {
		time.Sleep(d)
	}
}
