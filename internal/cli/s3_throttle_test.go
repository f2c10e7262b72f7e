package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// Throttling and refusals of an S3 store, injected by a reverse proxy in
// front of a real versitygw: the proxy answers some requests itself, the
// way Amazon S3 does (503 SlowDown, 403 AccessDenied, with their XML
// bodies), and passes every other request through unchanged.

// storeMaxAttempts is the bound on the attempts of one request to the
// store with the default --retries (4), the first one included.
const storeMaxAttempts = 5

// s3Fault is an answer the proxy gives instead of the store.
type s3Fault struct {
	status  int
	code    string
	message string
}

var (
	slowDown     = &s3Fault{http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate."}
	accessDenied = &s3Fault{http.StatusForbidden, "AccessDenied", "Access Denied"}
)

// faultProxy is a reverse proxy to an S3 endpoint (path-style addressing)
// that answers a request with the fault decide returns for it, or passes
// it through when decide returns nil. It counts, per "METHOD key", the
// attempts it saw, the faults it answered and the answers the store gave.
type faultProxy struct {
	bucket string
	// decide is given the request's method, its object key ("" for a
	// request on the bucket) and how many times that method and key were
	// requested before, this one included (1 for the first attempt). It
	// is called with mu held, one request at a time.
	decide func(method, key string, attempt int) *s3Fault

	mu       sync.Mutex
	attempts map[string]int
	faults   map[string]int
	answers  map[string][]int // the store's statuses, in order
	rp       *httputil.ReverseProxy
	requests int
}

// startFaultProxy runs a faultProxy to srv for the requests on bucket and
// returns it and its URL.
func startFaultProxy(t *testing.T, srv *s3test.Server, bucket string, decide func(method, key string, attempt int) *s3Fault) (*faultProxy, string) {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{
		bucket:   bucket,
		decide:   decide,
		attempts: map[string]int{},
		faults:   map[string]int{},
		answers:  map[string][]int{},
	}
	// The Host header is left as the client sent it (the proxy's
	// address): it is part of the request's signature.
	p.rp = httputil.NewSingleHostReverseProxy(target)
	p.rp.ModifyResponse = func(resp *http.Response) error {
		op := p.op(resp.Request)
		p.mu.Lock()
		p.answers[op] = append(p.answers[op], resp.StatusCode)
		p.mu.Unlock()
		return nil
	}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	return p, hs.URL
}

// key is the object key of a path-style request, "" for one on the
// bucket itself.
func (p *faultProxy) key(r *http.Request) string {
	rest := strings.TrimPrefix(r.URL.Path, "/"+p.bucket)
	return strings.TrimPrefix(rest, "/")
}

func (p *faultProxy) op(r *http.Request) string { return r.Method + " " + p.key(r) }

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := p.op(r)
	p.mu.Lock()
	p.requests++
	p.attempts[op]++
	attempt := p.attempts[op]
	fault := p.decide(r.Method, p.key(r), attempt)
	if fault != nil {
		p.faults[op]++
	}
	p.mu.Unlock()
	if fault == nil {
		p.rp.ServeHTTP(w, r)
		return
	}
	// Read the body first, as S3 does, so that the client always gets
	// the answer rather than a broken connection.
	_, _ = io.Copy(io.Discard, r.Body)
	id := fmt.Sprintf("FAULT%08d", attempt)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", id)
	w.WriteHeader(fault.status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><Key>%s</Key><RequestId>%s</RequestId><HostId>proxy</HostId></Error>`,
		fault.code, fault.message, p.key(r), id)
}

// counts returns a copy of the counters and the number of requests.
func (p *faultProxy) counts() (attempts, faults map[string]int, answers map[string][]int, requests int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	answers = map[string][]int{}
	for k, v := range p.answers {
		answers[k] = slices.Clone(v)
	}
	return maps.Clone(p.attempts), maps.Clone(p.faults), answers, p.requests
}

// withEnv is environ with key set to value.
func withEnv(environ []string, key, value string) []string {
	out := []string{}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// throttleSetup is a server with a bucket, an origin serving hashicorp/foo
// and a manifest mirroring it for two platforms.
type throttleSetup struct {
	srv    *s3test.Server
	o      origin
	dir    string
	direct []string // the environment reaching the server itself
}

func newThrottleSetup(t *testing.T, srv *s3test.Server, bucket string, versions ...string) *throttleSetup {
	t.Helper()
	srv.CreateBucket(t, bucket)
	o := newOrigin(t)
	for _, v := range versions {
		o.reg.Add("hashicorp", "foo", v, "linux_amd64", "darwin_arm64")
	}
	s := &throttleSetup{srv: srv, o: o, dir: t.TempDir()}
	s.manifest(t, ">= 1.0.0")
	s.direct = append(append(slices.Clone(o.environ), srv.Environ()...), "XDG_CACHE_HOME="+t.TempDir())
	return s
}

func (s *throttleSetup) manifest(t *testing.T, versions string) {
	t.Helper()
	writeManifest(t, s.dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "`+versions+`" }
`+s.o.hostBlock("registry.opentofu.org"))
}

// through is the environment reaching the server through the proxy at
// proxyURL.
func (s *throttleSetup) through(proxyURL string) []string {
	return withEnv(s.direct, "AWS_ENDPOINT_URL_S3", proxyURL)
}

// run runs tfmirror with environ.
func (s *throttleSetup) run(t *testing.T, environ []string, args ...string) (int, string, string) {
	t.Helper()
	o := s.o
	o.environ = environ
	return o.run(t, s.dir, args...)
}

// checkNoSecret fails the test if the output holds the server's
// credentials.
func (s *throttleSetup) checkNoSecret(t *testing.T, output string) {
	t.Helper()
	for name, v := range map[string]string{"secret access key": s.srv.SecretKey, "access key id": s.srv.AccessKey} {
		if strings.Contains(output, v) {
			t.Errorf("the %s was printed:\n%s", name, output)
		}
	}
}

// checkBucketResolves reads what clients see under prefix of bucket,
// directly from the server: every version listed in any index.json must
// resolve to a <version>.json, and every archive that lists must exist
// with the SHA-256 (zh:) it lists. It returns the versions listed per
// provider directory.
func checkBucketResolves(t *testing.T, srv *s3test.Server, bucket, prefix string) map[string][]string {
	t.Helper()
	client := srv.Client(t)
	get := func(key string) ([]byte, error) {
		out, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	var keys []string
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	listed := map[string][]string{}
	for _, key := range keys {
		if path.Base(key) != "index.json" || strings.Contains(key, "/.tfmirror/") {
			continue
		}
		data, err := get(key)
		if err != nil {
			t.Errorf("read s3://%s/%s: %v", bucket, key, err)
			continue
		}
		var idx struct {
			Versions map[string]json.RawMessage `json:"versions"`
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			t.Errorf("s3://%s/%s: %v", bucket, key, err)
			continue
		}
		dir := path.Dir(key)
		for v := range idx.Versions {
			rel := strings.TrimPrefix(dir, prefix)
			listed[rel] = append(listed[rel], v)
			checkVersionResolves(t, bucket, path.Join(dir, v+".json"), get)
		}
		slices.Sort(listed[strings.TrimPrefix(dir, prefix)])
	}
	if t.Failed() {
		t.Logf("keys in s3://%s/%s:\n%s", bucket, prefix, strings.Join(keys, "\n"))
	}
	return listed
}

// checkVersionResolves checks that the <version>.json at key exists and
// that every archive it lists exists with the zh: hash it lists.
func checkVersionResolves(t *testing.T, bucket, key string, get func(string) ([]byte, error)) {
	t.Helper()
	data, err := get(key)
	if err != nil {
		t.Errorf("s3://%s/%s is listed in its index.json but cannot be read: %v", bucket, key, err)
		return
	}
	var doc struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Archives) == 0 {
		t.Errorf("s3://%s/%s lists no archive (%v):\n%s", bucket, key, err, data)
		return
	}
	for platform, a := range doc.Archives {
		archive := path.Join(path.Dir(key), a.URL)
		body, err := get(archive)
		if err != nil {
			t.Errorf("s3://%s/%s lists %s at %s, which cannot be read: %v", bucket, key, platform, archive, err)
			continue
		}
		sum := sha256.Sum256(body)
		want := "zh:" + hex.EncodeToString(sum[:])
		hasZH := false
		for _, h := range a.Hashes {
			if strings.HasPrefix(h, "zh:") {
				hasZH = true
				if h != want {
					t.Errorf("s3://%s/%s lists %s for %s, which has %s", bucket, key, h, archive, want)
				}
			}
		}
		if !hasZH {
			t.Errorf("s3://%s/%s lists no zh: hash for %s", bucket, key, archive)
		}
	}
}

// objectExists reports whether the server holds bucket/key.
func objectExists(t *testing.T, srv *s3test.Server, bucket, key string) bool {
	t.Helper()
	_, err := srv.Client(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var nf *types.NotFound
	switch {
	case err == nil:
		return true
	case errors.As(err, &nf):
		return false
	}
	t.Fatalf("head s3://%s/%s: %v", bucket, key, err)
	return false
}

// A store that throttles now and then (503 SlowDown on the first attempts
// of every request) only slows the build down: the SDK retries, and the
// bucket ends up holding exactly what a directory build holds.
func TestBuildIntoBucketThrottleTransient(t *testing.T) {
	srv := s3test.Start(t)
	s := newThrottleSetup(t, srv, "mirror", "1.0.0")
	// The first 2 attempts of every PUT are throttled, and every third of
	// the other requests (HEAD, GET, LIST, DELETE); a throttled request
	// is passed through when it comes again.
	others := 0
	proxy, proxyURL := startFaultProxy(t, srv, "mirror", func(method, _ string, attempt int) *s3Fault {
		if method == http.MethodPut {
			if attempt <= 2 {
				return slowDown
			}
			return nil
		}
		others++
		if others%3 == 1 && attempt == 1 {
			return slowDown
		}
		return nil
	})
	uri := srv.URI("mirror", "site")
	code, stdout, stderr := s.run(t, s.through(proxyURL), "build", "--out", "site", "--out", uri)
	s.checkNoSecret(t, stdout+stderr)
	if code != ExitOK {
		t.Fatalf("build through a throttling store: exit %d\n%s%s", code, stdout, stderr)
	}

	attempts, faults, answers, requests := proxy.counts()
	throttled := 0
	var puts []string
	for op, n := range faults {
		throttled += n
		method, key, _ := strings.Cut(op, " ")
		if method != http.MethodPut {
			continue
		}
		puts = append(puts, key)
		// Each throttled PUT was retried until the store took it.
		if n != 2 || attempts[op] < 3 || !slices.Contains(answers[op], http.StatusOK) {
			t.Errorf("%s: %d attempts, %d throttled, the store answered %v: want it written after 2 throttled attempts", op, attempts[op], n, answers[op])
		}
		// tfmirror's private objects (its lock) are gone once it is done;
		// every other one must be there.
		if !strings.HasPrefix(key, "site/.tfmirror/") && !objectExists(t, srv, "mirror", key) {
			t.Errorf("s3://mirror/%s was throttled and never written", key)
		}
	}
	slices.Sort(puts)
	t.Logf("%d requests, %d answered 503 SlowDown; PUTs throttled: %s", requests, throttled, strings.Join(puts, " "))
	if throttled == 0 || len(puts) == 0 {
		t.Fatalf("the proxy throttled %d requests, %d of them PUTs: the fault was not injected", throttled, len(puts))
	}
	for _, want := range []string{
		"site/registry.opentofu.org/hashicorp/foo/index.json",
		"site/registry.opentofu.org/hashicorp/foo/1.0.0.json",
		"site/registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip",
	} {
		if !slices.Contains(puts, want) {
			t.Errorf("%s was never throttled", want)
		}
	}

	// The bucket holds exactly the directory's published files.
	local := allPublishedFiles(t, filepath.Join(s.dir, "site"))
	remote := contents(bucketFiles(t, srv, "mirror", "site/"))
	diffSnapshots(t, local, remote)
	versions := checkBucketResolves(t, srv, "mirror", "site/")
	if got := versions["registry.opentofu.org/hashicorp/foo"]; !slices.Equal(got, []string{"1.0.0"}) {
		t.Errorf("index.json lists %q, want 1.0.0", got)
	}
	if code, stdout, stderr := s.run(t, s.direct, "verify", uri); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("verify %s: exit %d\n%s%s", uri, code, stdout, stderr)
	}
}

// A store that keeps throttling the write of one object fails the build
// once the SDK's attempts are spent: the error names the object and the
// throttling, no secret is printed, and clients see the bucket as it was
// or with complete versions only.
func TestBuildIntoBucketThrottlePersistent(t *testing.T) {
	srv := s3test.Start(t)
	const dir = "site/registry.opentofu.org/hashicorp/foo/"
	cases := []struct{ name, key string }{
		{"index.json", dir + "index.json"},
		{"version document", dir + "1.1.0.json"},
		{"archive", dir + "terraform-provider-foo_1.1.0_linux_amd64.zip"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bucket := fmt.Sprintf("mirror%d", i)
			s := newThrottleSetup(t, srv, bucket, "1.0.0")
			uri := srv.URI(bucket, "site")
			s.manifest(t, "1.0.0")
			if code, stdout, stderr := s.run(t, s.direct, "build", "--out", uri); code != ExitOK {
				t.Fatalf("first build: exit %d\n%s%s", code, stdout, stderr)
			}
			s.o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64", "darwin_arm64")
			s.manifest(t, ">= 1.0.0")
			proxy, proxyURL := startFaultProxy(t, srv, bucket, func(method, key string, _ int) *s3Fault {
				if method == http.MethodPut && key == tc.key {
					return slowDown
				}
				return nil
			})

			start := time.Now()
			code, stdout, stderr := s.run(t, s.through(proxyURL), "build", "--out", uri)
			took := time.Since(start)
			t.Logf("exit %d after %s:\n%s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
			s.checkNoSecret(t, stdout+stderr)
			if code == ExitOK {
				t.Fatalf("the build succeeded though s3://%s/%s could not be written:\n%s%s", bucket, tc.key, stdout, stderr)
			}
			object := "s3://" + bucket + "/" + tc.key
			if !strings.Contains(stderr, object) || !strings.Contains(stderr, "SlowDown") {
				t.Errorf("the error does not name %s and SlowDown:\n%s", object, stderr)
			}
			attempts, faults, _, _ := proxy.counts()
			op := http.MethodPut + " " + tc.key
			// Retried, but not beyond the store's bound: one Put's
			// attempts, since the build stops at the first failed Put.
			if n := attempts[op]; n < 2 || n > storeMaxAttempts || faults[op] != n {
				t.Errorf("%s: %d attempts, %d throttled; want 2 to %d, all throttled", op, n, faults[op], storeMaxAttempts)
			}
			// Not a measure of speed: the waits between the attempts
			// are the run's backoff (at most 0.5+1+2+4s with the default
			// --retries), so a build that fails on throttling gives up
			// well within a minute rather than after minutes.
			if took > time.Minute {
				t.Errorf("the build took %s to give up", took)
			}

			versions := checkBucketResolves(t, srv, bucket, "site/")
			if got := versions["registry.opentofu.org/hashicorp/foo"]; !slices.Contains(got, "1.0.0") {
				t.Errorf("index.json lists %q, no longer 1.0.0", got)
			}
			if code, stdout, stderr := s.run(t, s.direct, "verify", uri); code != ExitOK || !strings.Contains(stdout, "0 problems") {
				t.Errorf("verify %s after the failed build: exit %d\n%s%s", uri, code, stdout, stderr)
			}
		})
	}
}

// --retries bounds a bucket's requests as it bounds downloads, and each
// retry is a "retry" event naming the object: a store that keeps
// throttling one write is asked retries+1 times.
func TestBuildIntoBucketFollowsRetries(t *testing.T) {
	srv := s3test.Start(t)
	const key = "site/registry.opentofu.org/hashicorp/foo/index.json"
	s := newThrottleSetup(t, srv, "retries", "1.0.0")
	proxy, proxyURL := startFaultProxy(t, srv, "retries", func(method, k string, _ int) *s3Fault {
		if method == http.MethodPut && k == key {
			return slowDown
		}
		return nil
	})
	code, stdout, stderr := s.run(t, s.through(proxyURL), "build", "--out", srv.URI("retries", "site"), "--retries", "1", "--json")
	s.checkNoSecret(t, stdout+stderr)
	if code == ExitOK {
		t.Fatalf("the build succeeded though %s could not be written:\n%s%s", key, stdout, stderr)
	}
	attempts, _, _, _ := proxy.counts()
	if n := attempts[http.MethodPut+" "+key]; n != 2 {
		t.Errorf("PUT %s: %d attempts, want 2 (--retries 1)", key, n)
	}
	var retries []string
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct {
			Event   string
			Attempt int
			URL     string
			Message string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "retry" {
			retries = append(retries, line)
			if ev.Attempt != 2 || !strings.HasSuffix(ev.URL, "/retries/"+key) || !strings.Contains(ev.Message, "SlowDown") {
				t.Errorf("retry event %s: want attempt 2 of the object's URL, saying SlowDown", line)
			}
		}
	}
	if len(retries) != 1 {
		t.Errorf("%d retry events, want 1:\n%s", len(retries), stdout)
	}
}

// A refused write (403 AccessDenied) is final: it is not retried, so the
// build fails at once with an error naming the object, and without the
// credentials.
func TestBuildIntoBucketThrottleRefusalNotRetried(t *testing.T) {
	srv := s3test.Start(t)
	const archive = "site/registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"
	cases := []struct {
		name   string
		refuse func(key string) bool
	}{
		// Read-only credentials: no PUT is allowed at all.
		{"every PUT", func(string) bool { return true }},
		// A bucket policy denying one key.
		{"one archive", func(key string) bool { return key == archive }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bucket := fmt.Sprintf("refused%d", i)
			s := newThrottleSetup(t, srv, bucket, "1.0.0")
			uri := srv.URI(bucket, "site")
			proxy, proxyURL := startFaultProxy(t, srv, bucket, func(method, key string, _ int) *s3Fault {
				if method == http.MethodPut && tc.refuse(key) {
					return accessDenied
				}
				return nil
			})
			code, stdout, stderr := s.run(t, s.through(proxyURL), "build", "--out", uri)
			t.Logf("exit %d:\n%s", code, strings.TrimSpace(stderr))
			s.checkNoSecret(t, stdout+stderr)
			if code == ExitOK {
				t.Fatalf("the build succeeded though its writes were refused:\n%s%s", stdout, stderr)
			}
			attempts, faults, _, _ := proxy.counts()
			refused := 0
			for op, n := range faults {
				refused += n
				_, key, _ := strings.Cut(op, " ")
				// A Put is one attempt: the SDK does not retry a 403
				// (retried, it would be storeMaxAttempts). At most 2
				// leaves a caller room to ask twice.
				if attempts[op] > 2 {
					t.Errorf("%s was refused and attempted %d times", op, attempts[op])
				}
				if !strings.Contains(stderr, "s3://"+bucket+"/"+key) {
					t.Errorf("the error does not name the refused s3://%s/%s:\n%s", bucket, key, stderr)
				}
			}
			if refused == 0 || refused > 2 {
				t.Errorf("%d PUTs were refused: want 1 (the build stops at the first)", refused)
			}
			if !strings.Contains(stderr, "AccessDenied") {
				t.Errorf("the error does not say AccessDenied:\n%s", stderr)
			}
			checkBucketResolves(t, srv, bucket, "site/")
		})
	}
}

// A bucket's configuration that cannot be used (an endpoint that is not
// an http(s) URL, or holds credentials; half a key pair) is bad input:
// exit 2 before any request, naming the variable, never its value.
func TestBucketConfigurationIsInput(t *testing.T) {
	srv := s3test.Start(t)
	s := newThrottleSetup(t, srv, "config", "1.0.0")
	for name, env := range map[string][]string{
		"no scheme":       withEnv(s.direct, "AWS_ENDPOINT_URL_S3", "127.0.0.1:1"),
		"ftp":             withEnv(s.direct, "AWS_ENDPOINT_URL_S3", "ftp://127.0.0.1:1"),
		"credentials":     withEnv(s.direct, "AWS_ENDPOINT_URL_S3", "http://user:hunter2@127.0.0.1:1"),
		"half a key pair": withEnv(withEnv(s.direct, "AWS_SECRET_ACCESS_KEY", ""), "AWS_ACCESS_KEY_ID", "AKIAHALF"),
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := s.run(t, env, "build", "--out", srv.URI("config", "site"))
			if code != ExitUsage || strings.Contains(stdout+stderr, "hunter2") || !strings.Contains(stderr, "AWS_") {
				t.Errorf("exit %d, want %d naming the variable and no secret\n%s%s", code, ExitUsage, stdout, stderr)
			}
		})
	}
}
