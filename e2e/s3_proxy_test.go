package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// ---------------------------------------------------------------------------
// A counting reverse proxy in front of the S3 server

// s3Proxy is a plain reverse proxy on 127.0.0.1 in front of an S3 server
// that records every request it forwards ("METHOD /path?query"), so a test
// can count what the tool under test sent, independently of that tool.
//
// It keeps the request's Host header (httputil.NewSingleHostReverseProxy
// does not rewrite it), so SigV4 signatures made for the proxy's address
// still verify at the server.
type s3Proxy struct {
	URL string // "http://127.0.0.1:PORT", no trailing slash
	// Hold, if set before requests arrive, says how long to hold a
	// request before forwarding it (0: not at all), to make writers
	// collide.
	Hold func(r *http.Request) time.Duration

	mu       sync.Mutex
	reqs     []string
	statuses map[int]int
}

func startS3Proxy(t testing.TB, endpoint string) *s3Proxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Proxy{statuses: map[int]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		p.statuses[resp.StatusCode]++
		p.mu.Unlock()
		return nil
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			line += "?" + r.URL.RawQuery
		}
		p.mu.Lock()
		p.reqs = append(p.reqs, line)
		p.mu.Unlock()
		if p.Hold != nil {
			if d := p.Hold(r); d > 0 {
				time.Sleep(d)
			}
		}
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	p.URL = "http://" + l.Addr().String()
	return p
}

// Requests returns the requests forwarded so far, in order.
func (p *s3Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reqs...)
}

// Answered returns how many answers of the server had the status.
func (p *s3Proxy) Answered(status int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.statuses[status]
}

// isS3Write reports whether a logged request ("METHOD /path?query")
// changes the store: any method but GET and HEAD (PUT, POST for multipart
// uploads and multi-object deletes, DELETE, PATCH).
func isS3Write(req string) bool {
	method, _, _ := strings.Cut(req, " ")
	return method != http.MethodGet && method != http.MethodHead
}

// s3Environ is srv's client environment with the endpoint replaced.
func s3Environ(srv *s3test.Server, endpoint string) []string {
	return mergeEnv(srv.Environ(), []string{"AWS_ENDPOINT_URL_S3=" + endpoint})
}

// ---------------------------------------------------------------------------
// Anonymous read of a prefix, and nginx in front of it like a CDN

// grantPublicRead gives anonymous clients s3:GetObject on every object
// under bucket/prefix/ except the tool's private PREFIX/.tfmirror/ (the
// lock), with a bucket policy: versitygw evaluates a policy whose
// Principal is "*" for unauthenticated requests (its public-bucket
// support). It then checks that an anonymous GET is answered by the
// policy, not refused outright.
func grantPublicRead(t testing.TB, srv *s3test.Server, bucket, prefix string) {
	t.Helper()
	prefix = strings.Trim(prefix, "/")
	policy := fmt.Sprintf(`{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%[1]s/%[2]s/*"},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%[1]s/%[2]s/.tfmirror/*"}
  ]
}`, bucket, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := srv.Client(t)
	if _, err := client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatalf("put bucket policy (anonymous read of %s/%s/): %v", bucket, prefix, err)
	}

	// An anonymous GET of an object that exists must succeed, and of one
	// under .tfmirror/ must be refused.
	put := func(key string) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key),
			Body: strings.NewReader("{}"), ContentLength: aws.Int64(2), ContentType: aws.String("application/json"),
		}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	del := func(key string) {
		t.Helper()
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatalf("delete %s: %v", key, err)
		}
	}
	anon := func(key string) int {
		t.Helper()
		resp, err := http.Get(srv.Endpoint + "/" + bucket + "/" + key)
		if err != nil {
			t.Fatalf("anonymous GET %s: %v", key, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	public, private := prefix+"/.probe-public.json", prefix+"/.tfmirror/probe.json"
	put(public)
	put(private)
	if code := anon(public); code != http.StatusOK {
		t.Fatalf("anonymous GET %s/%s after granting public read: %d, want 200", bucket, public, code)
	}
	if code := anon(private); code != http.StatusForbidden {
		t.Fatalf("anonymous GET %s/%s (denied by the policy): %d, want 403", bucket, private, code)
	}
	del(public)
	del(private)
}

// startBucketNginx serves bucket/prefix/ of srv over HTTPS with a
// certificate of ca, as a CDN in front of a bucket would: a TLS server whose
// only location proxies GET and HEAD to the bucket's prefix, anonymously
// (nginx adds no credentials), passing the bucket's stored Content-Type on.
// It returns the base URL "https://127.0.0.1:PORT/".
func startBucketNginx(t testing.TB, srv *s3test.Server, bucket, prefix string, ca *testca.CA) string {
	t.Helper()
	upstream := strings.TrimPrefix(srv.Endpoint, "http://")
	if upstream == srv.Endpoint {
		t.Fatalf("startBucketNginx: endpoint %s is not plain http", srv.Endpoint)
	}
	prefix = strings.Trim(prefix, "/")
	block := func(port int, certFile, keyFile, _ string) string {
		return fmt.Sprintf(`server {
		listen 127.0.0.1:%d ssl;
		server_name localhost 127.0.0.1;
		ssl_certificate %s;
		ssl_certificate_key %s;
		location / {
			limit_except GET {
				deny all;
			}
			proxy_pass http://%s/%s/%s/;
			proxy_http_version 1.1;
			proxy_set_header Authorization "";
		}
	}`, port, nginxQuote(certFile), nginxQuote(keyFile), upstream, bucket, prefix)
	}
	return startNginxServer(t, t.TempDir(), ca, block)
}
