package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
)

// The operations the proxy tells apart, as /_stats names them.
const (
	opPutObject = "put_object" // PUT of an object's content (PutObject)
	opPutPart   = "put_part"   // PUT of a part of a multipart upload (UploadPart)
	opPutCopy   = "put_copy"   // PUT with x-amz-copy-source (CopyObject, UploadPartCopy)
	opPutBucket = "put_bucket" // PUT on a bucket (CreateBucket, bucket settings)
	opPutOther  = "put_other"  // PUT of an object's subresource (?tagging, ?acl, ...)
	opPost      = "post"       // POST (multipart create/complete, DeleteObjects)
	opGetObject = "get_object" // GET of an object
	opList      = "list"       // GET on a bucket or the service (listings, bucket settings)
	opHead      = "head"       // HEAD of an object or a bucket
	opDelete    = "delete"     // DELETE of an object, an upload or a bucket
	opOther     = "other"
)

var allOps = []string{opPutObject, opPutPart, opPutCopy, opPutBucket, opPutOther, opPost, opGetObject, opList, opHead, opDelete, opOther}

// classify names the S3 operation of a path-style request.
func classify(r *http.Request) string {
	_, key := splitPath(r.URL.Path)
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut:
		switch {
		case key == "":
			return opPutBucket
		case r.Header.Get("X-Amz-Copy-Source") != "":
			return opPutCopy
		case q.Has("partNumber") && q.Has("uploadId"):
			return opPutPart
		case q.Has("acl") || q.Has("tagging") || q.Has("retention") || q.Has("legal-hold"):
			return opPutOther
		}
		return opPutObject
	case http.MethodPost:
		return opPost
	case http.MethodGet:
		if key == "" {
			return opList
		}
		return opGetObject
	case http.MethodHead:
		return opHead
	case http.MethodDelete:
		return opDelete
	}
	return opOther
}

// splitPath splits a path-style URL path into bucket and key.
func splitPath(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// isPrivate reports whether key lies in a .tfmirror/ directory (tfmirror's
// lock and leases: not part of the published mirror).
func isPrivate(key string) bool {
	return strings.Contains("/"+key, "/.tfmirror/")
}

func isWrite(op string) bool {
	return strings.HasPrefix(op, "put_") || op == opPost || op == opDelete
}

// proxy forwards S3 requests to versitygw and counts them.
type proxy struct {
	rp     *httputil.ReverseProxy
	client *s3.Client // versitygw itself, for /_types

	mu            sync.Mutex
	counts        map[string]int64
	requests      int64
	privateWrites int64
	errors        int64
	uploadBytes   atomic.Int64
}

func newProxy(target *url.URL, client *s3.Client) *proxy {
	p := &proxy{client: client, counts: map[string]int64{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The client signed its request for the proxy's address.
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{
			MaxIdleConnsPerHost: 64,
			DisableCompression:  true,
			IdleConnTimeout:     90 * time.Second,
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode >= 400 {
				p.mu.Lock()
				p.errors++
				p.mu.Unlock()
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			p.mu.Lock()
			p.errors++
			p.mu.Unlock()
			http.Error(w, "benchs3: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_stats":
		p.serveStats(w)
		return
	case "/_types":
		p.serveTypes(w, r)
		return
	}
	op := classify(r)
	_, key := splitPath(r.URL.Path)
	p.mu.Lock()
	p.requests++
	p.counts[op]++
	if isWrite(op) && isPrivate(key) {
		p.privateWrites++
	}
	p.mu.Unlock()
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &p.uploadBytes}
	}
	p.rp.ServeHTTP(w, r)
}

// stats are the counters so far: requests (all), one line per operation
// (allOps), puts (every PUT), writes (every PUT, POST and DELETE),
// private_writes (the writes of keys under a .tfmirror/ directory),
// errors (answers of status 400 or more, and failures to forward), and
// upload_bytes (request body bytes forwarded).
func (p *proxy) stats() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	var puts, writes int64
	fmt.Fprintf(&b, "requests=%d\n", p.requests)
	for _, op := range allOps {
		n := p.counts[op]
		fmt.Fprintf(&b, "%s=%d\n", op, n)
		if strings.HasPrefix(op, "put_") {
			puts += n
		}
		if isWrite(op) {
			writes += n
		}
	}
	fmt.Fprintf(&b, "puts=%d\nwrites=%d\nprivate_writes=%d\nerrors=%d\nupload_bytes=%d\n",
		puts, writes, p.privateWrites, p.errors, p.uploadBytes.Load())
	return b.String()
}

func (p *proxy) serveStats(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, p.stats())
}

// serveTypes answers /_types?bucket=B&prefix=P with what versitygw stores
// under B/P (see types).
func (p *proxy) serveTypes(w http.ResponseWriter, r *http.Request) {
	bucket := r.URL.Query().Get("bucket")
	if bucket == "" {
		http.Error(w, "benchs3: /_types needs ?bucket=", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	out, err := types(ctx, p.client, bucket, r.URL.Query().Get("prefix"))
	if err != nil {
		http.Error(w, "benchs3: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, out)
}

// The kinds of file of a network mirror that /_types tells apart.
var kinds = []string{"json", "zip", "shasums", "sig", "other"}

func kindOf(key string) string {
	name := path.Base(key)
	switch {
	case strings.HasSuffix(name, ".json"):
		return "json"
	case strings.HasSuffix(name, ".zip"):
		return "zip"
	case strings.HasSuffix(name, "_SHA256SUMS"):
		return "shasums"
	case strings.HasSuffix(name, ".sig"):
		return "sig"
	}
	return "other"
}

// headInfo is what a HEAD says of an object.
type headInfo struct {
	kind, contentType, cacheControl string
}

// types lists bucket/prefix (keys under .tfmirror/ left out) and HEADs
// every object, and describes them as KEY=VALUE lines: objects=N, then for
// each kind K (json, zip, shasums, sig, other) K_objects=N,
// K_content_type=... and K_cache_control=..., each value the one every
// object of the kind has, or "V1 (N1), V2 (N2)" when they differ,
// "(none)" for no header.
func types(ctx context.Context, client *s3.Client, bucket, prefix string) (string, error) {
	var keys []string
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return "", fmt.Errorf("list %s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); !isPrivate(strings.TrimPrefix(k, prefix)) {
				keys = append(keys, k)
			}
		}
	}

	infos := make([]headInfo, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, k := range keys {
		g.Go(func() error {
			out, err := client.HeadObject(gctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
			if err != nil {
				return fmt.Errorf("head %s/%s: %w", bucket, k, err)
			}
			infos[i] = headInfo{kind: kindOf(k), contentType: aws.ToString(out.ContentType), cacheControl: aws.ToString(out.CacheControl)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "objects=%d\n", len(keys))
	for _, kind := range kinds {
		ct, cc := map[string]int{}, map[string]int{}
		n := 0
		for _, in := range infos {
			if in.kind == kind {
				n++
				ct[in.contentType]++
				cc[in.cacheControl]++
			}
		}
		fmt.Fprintf(&b, "%s_objects=%d\n", kind, n)
		if n > 0 {
			fmt.Fprintf(&b, "%s_content_type=%s\n%s_cache_control=%s\n", kind, summarize(ct), kind, summarize(cc))
		}
	}
	return b.String(), nil
}

// summarize describes the values of a header over several objects: the
// value if all have the same, else each with its count, most frequent
// first; "(none)" stands for no header.
func summarize(values map[string]int) string {
	keys := slices.Collect(maps.Keys(values))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(values[b], values[a]), cmp.Compare(a, b))
	})
	name := func(v string) string {
		if v == "" {
			return "(none)"
		}
		return strings.ReplaceAll(v, "\n", " ")
	}
	if len(keys) == 1 {
		return name(keys[0])
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", name(k), values[k])
	}
	return strings.Join(parts, ", ")
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}
