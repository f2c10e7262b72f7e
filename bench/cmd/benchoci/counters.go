package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// syncParam marks the requests benchoci makes to the registry itself (to
// know the log is complete); they are not counted.
const syncParam = "benchoci-sync"

// The kinds of request the counters tell apart, as /_stats names them.
// Every request but a 401 challenge has one.
const (
	kPing           = "ping"           // GET /v2/
	kCatalog        = "catalog"        // GET /v2/_catalog
	kTagList        = "tag_lists"      // GET /v2/<name>/tags/list
	kManifestHead   = "manifest_heads" // HEAD /v2/<name>/manifests/<ref>
	kManifestGet    = "manifest_gets"  // GET /v2/<name>/manifests/<ref>
	kManifestPut    = "manifest_puts"  // PUT /v2/<name>/manifests/<ref>
	kManifestDelete = "manifest_deletes"
	kBlobHead       = "blob_heads" // HEAD /v2/<name>/blobs/<digest>
	kBlobGet        = "blob_gets"  // GET /v2/<name>/blobs/<digest>
	kBlobDelete     = "blob_deletes"
	kUploadStart    = "upload_starts"  // POST /v2/<name>/blobs/uploads/ that starts an upload
	kBlobMount      = "blob_mounts"    // POST /v2/<name>/blobs/uploads/?mount=... answered 201
	kUploadPatch    = "upload_patches" // PATCH of an upload (a chunk)
	kBlobUpload     = "blob_uploads"   // PUT that completes an upload (monolithic or chunked)
	kUploadOther    = "upload_other"   // GET or DELETE of an upload
	kReferrers      = "referrers"      // GET /v2/<name>/referrers/<digest>
	kOther          = "other"
)

var allKinds = []string{kPing, kCatalog, kTagList, kManifestHead, kManifestGet, kManifestPut, kManifestDelete,
	kBlobHead, kBlobGet, kBlobDelete, kUploadStart, kBlobMount, kUploadPatch, kBlobUpload, kUploadOther, kReferrers, kOther}

// writeKinds change what the registry stores.
var writeKinds = []string{kManifestPut, kManifestDelete, kBlobDelete, kUploadStart, kBlobMount, kUploadPatch, kBlobUpload}

// classify names the kind of a registry API request.
func classify(method, uri string, status int) string {
	u, err := url.Parse(uri)
	if err != nil {
		return kOther
	}
	p := u.Path
	if p == "/v2/" || p == "/v2" {
		return kPing
	}
	if p == "/v2/_catalog" {
		return kCatalog
	}
	if !strings.HasPrefix(p, "/v2/") {
		return kOther
	}
	switch {
	case strings.HasSuffix(p, "/tags/list"):
		return kTagList
	case strings.Contains(p, "/blobs/uploads"):
		switch method {
		case http.MethodPost:
			if u.Query().Has("mount") && status == http.StatusCreated {
				return kBlobMount
			}
			return kUploadStart
		case http.MethodPatch:
			return kUploadPatch
		case http.MethodPut:
			return kBlobUpload
		}
		return kUploadOther
	case strings.Contains(p, "/manifests/"):
		switch method {
		case http.MethodHead:
			return kManifestHead
		case http.MethodGet:
			return kManifestGet
		case http.MethodPut:
			return kManifestPut
		case http.MethodDelete:
			return kManifestDelete
		}
	case strings.Contains(p, "/blobs/"):
		switch method {
		case http.MethodHead:
			return kBlobHead
		case http.MethodGet:
			return kBlobGet
		case http.MethodDelete:
			return kBlobDelete
		}
	case strings.Contains(p, "/referrers/"):
		return kReferrers
	}
	return kOther
}

// logEntry is the part of a "response completed" JSON log entry read.
type logEntry struct {
	Msg    string `json:"msg"`
	Method string `json:"http.request.method"`
	URI    string `json:"http.request.uri"`
	Status int    `json:"http.response.status"`
}

// counters count the requests of the registry's log.
type counters struct {
	storage string // for the size of uploaded blobs

	mu         sync.Mutex
	n          map[string]int64
	lastSynced int
}

func newCounters(storage string) *counters {
	return &counters{storage: storage, n: map[string]int64{}}
}

// line counts one line of the registry's log. docker-registry 2.8 logs
// one entry per request: "response completed" (status < 400), "response
// completed with error" (other statuses), or, for a request refused for
// want of credentials (401, a challenge the client answers by retrying),
// only a warning "error authorizing context: ...". Other lines are ignored.
func (c *counters) line(b []byte) {
	if !bytes.HasPrefix(b, []byte("{")) {
		return
	}
	var e logEntry
	if json.Unmarshal(b, &e) != nil || e.URI == "" {
		return
	}
	switch {
	case e.Msg == "response completed" || e.Msg == "response completed with error":
	case strings.HasPrefix(e.Msg, "error authorizing context"):
		e.Status = http.StatusUnauthorized
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, err := url.Parse(e.URI); err == nil && u.Query().Has(syncParam) {
		if seq, err := strconv.Atoi(u.Query().Get(syncParam)); err == nil && seq > c.lastSynced {
			c.lastSynced = seq
		}
		return
	}
	c.n["requests"]++
	switch {
	case e.Status == http.StatusUnauthorized:
		c.n["unauthorized"]++
		return
	case e.Status == http.StatusNotFound:
		c.n["not_found"]++ // a HEAD of what is not there yet, mostly
	case e.Status >= 400:
		c.n["errors"]++
	}
	kind := classify(e.Method, e.URI, e.Status)
	c.n[kind]++
	if kind == kBlobUpload && e.Status == http.StatusCreated {
		size := c.blobSize(e.URI)
		c.n["upload_bytes"] += size
		c.n["largest_upload"] = max(c.n["largest_upload"], size)
	}
}

// blobSize is the size of the blob a completed upload (its PUT's URI names
// the digest) stored, 0 if unknown.
func (c *counters) blobSize(uri string) int64 {
	u, err := url.Parse(uri)
	if err != nil {
		return 0
	}
	algo, hexDigest, ok := strings.Cut(u.Query().Get("digest"), ":")
	if !ok || len(hexDigest) < 2 || strings.ContainsAny(algo+hexDigest, "/.") {
		return 0
	}
	fi, err := os.Stat(filepath.Join(c.storage, "docker", "registry", "v2", "blobs", algo, hexDigest[:2], hexDigest, "data"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (c *counters) synced() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSynced
}

// snapshot is every counter (0 for those never seen) and their sum
// writes: the requests that change what the registry stores. One value is
// no counter: largest_upload, the size of the largest blob whose upload
// completed (so a run can tell that a large archive went up as one blob
// of its size).
func (c *counters) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	for _, k := range append(slices.Clone(allKinds), "requests", "unauthorized", "not_found", "errors", "upload_bytes", "largest_upload") {
		out[k] += 0
	}
	out["writes"] = 0
	for _, k := range writeKinds {
		out["writes"] += out[k]
	}
	return out
}

func formatKV[V any](kv map[string]V) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		fmt.Fprintf(&b, "%s=%v\n", k, kv[k])
	}
	return b.String()
}

// logSink takes the registry's output: it writes it to a file and feeds
// each line to the counters, and keeps the last lines for error messages.
type logSink struct {
	counters *counters

	mu      sync.Mutex
	file    io.Writer
	partial []byte
	last    []byte
}

func newLogSink(file io.Writer, c *counters) *logSink {
	return &logSink{file: file, counters: c}
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.file.Write(p) // the log file is for reading after; counting goes on without it
	s.last = append(s.last, p...)
	if len(s.last) > 16<<10 {
		s.last = slices.Clone(s.last[len(s.last)-8<<10:])
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.counters.line(s.partial[:i])
		s.partial = s.partial[i+1:]
	}
	if len(s.partial) == 0 {
		s.partial = nil
	}
	return len(p), nil
}

func (s *logSink) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.last)
}

// storedTags reads the registry's storage (distribution's filesystem
// layout) under the repository prefix: how many repositories, tags, and
// tags that name versions (not the "sha256-..." tags of the referrers
// tag schema).
func storedTags(storage, prefix string) (map[string]int, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" && (!fs.ValidPath(prefix) || path.Clean(prefix) != prefix) {
		return nil, fmt.Errorf("invalid prefix %q", prefix)
	}
	out := map[string]int{"repositories": 0, "tags": 0, "version_tags": 0}
	root := filepath.Join(storage, "docker", "registry", "v2", "repositories", filepath.FromSlash(prefix))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipAll
			}
			return err
		}
		if !d.IsDir() || d.Name() != "_manifests" {
			return nil
		}
		out["repositories"]++
		tags, err := os.ReadDir(filepath.Join(p, "tags"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, t := range tags {
			if _, err := os.Stat(filepath.Join(p, "tags", t.Name(), "current", "link")); err != nil {
				continue
			}
			out["tags"]++
			if !strings.HasPrefix(t.Name(), "sha256-") {
				out["version_tags"]++
			}
		}
		return fs.SkipDir
	})
	return out, err
}
