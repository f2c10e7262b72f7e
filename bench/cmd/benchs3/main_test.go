package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, target string
		header         map[string]string
		want           string
	}{
		{"PUT", "/b/k/index.json", nil, opPutObject},
		{"PUT", "/b/k/index.json?x-id=PutObject", nil, opPutObject},
		{"PUT", "/b", nil, opPutBucket},
		{"PUT", "/b/", nil, opPutBucket},
		{"PUT", "/b/k.zip?partNumber=2&uploadId=u", nil, opPutPart},
		{"PUT", "/b/k.zip", map[string]string{"X-Amz-Copy-Source": "/b/k.zip"}, opPutCopy},
		{"PUT", "/b/k.zip?tagging", nil, opPutOther},
		{"POST", "/b/k.zip?uploads", nil, opPost},
		{"POST", "/b?delete", nil, opPost},
		{"GET", "/b?list-type=2&prefix=p/", nil, opList},
		{"GET", "/", nil, opList},
		{"GET", "/b/p/index.json", nil, opGetObject},
		{"HEAD", "/b/p/index.json", nil, opHead},
		{"HEAD", "/b", nil, opHead},
		{"DELETE", "/b/p/.tfmirror/lock", nil, opDelete},
		{"PATCH", "/b/k", nil, opOther},
	} {
		r := httptest.NewRequest(c.method, "http://127.0.0.1"+c.target, nil)
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		if got := classify(r); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.target, got, c.want)
		}
	}
}

func TestPrivateAndKinds(t *testing.T) {
	for key, want := range map[string]bool{
		".tfmirror/lock": true, "p/.tfmirror/writers/x": true, "p/index.json": false, "p/x.tfmirror/lock": false,
	} {
		if got := isPrivate(key); got != want {
			t.Errorf("isPrivate(%q) = %v", key, got)
		}
	}
	for key, want := range map[string]string{
		"p/catalog.json":     "json",
		"p/h/n/t/1.0.0.json": "json",
		"p/h/n/t/terraform-provider-t_1.0.0_linux_amd64.zip": "zip",
		"p/h/n/t/terraform-provider-t_1.0.0_SHA256SUMS":      "shasums",
		"p/h/n/t/terraform-provider-t_1.0.0_SHA256SUMS.sig":  "sig",
		"p/README": "other",
	} {
		if got := kindOf(key); got != want {
			t.Errorf("kindOf(%q) = %s, want %s", key, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	if got := summarize(map[string]int{"application/json": 4}); got != "application/json" {
		t.Errorf("one value: %q", got)
	}
	if got := summarize(map[string]int{"": 1, "application/zip": 3, "b": 1}); got != "application/zip (3), (none) (1), b (1)" {
		t.Errorf("several values: %q", got)
	}
}

// TestProxyCountsSignedRequests sends SDK requests, signed for the proxy's
// address, through the proxy to a real versitygw: they must succeed (the
// proxy keeps the Host header), be counted by operation, and /_types must
// report what was stored.
func TestProxyCountsSignedRequests(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bench")
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(target, srv.Client(t))
	front := httptest.NewServer(p)
	defer front.Close()
	client := s3.New(s3.Options{
		Region:                     s3test.Region,
		Credentials:                credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		BaseEndpoint:               aws.String(front.URL),
		UsePathStyle:               true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	ctx := t.Context()
	for key, ct := range map[string]string{"p/index.json": "application/json", "p/a.zip": "", "p/.tfmirror/lock": "application/json"} {
		in := &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(key), Body: strings.NewReader("{}")}
		if ct != "" {
			in.ContentType = aws.String(ct)
		}
		if _, err := client.PutObject(ctx, in); err != nil {
			t.Fatalf("put %s through the proxy: %v", key, err)
		}
	}
	if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("p/index.json")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: aws.String("p/missing")}); err == nil {
		t.Fatal("HEAD of a missing object succeeded")
	}

	stats := get(t, front.URL+"/_stats")
	for _, want := range []string{"requests=5\n", "put_object=3\n", "head=2\n", "puts=3\n", "writes=3\n", "private_writes=1\n", "errors=1\n", "upload_bytes=6\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("/_stats lacks %q:\n%s", want, stats)
		}
	}
	types := get(t, front.URL+"/_types?bucket=bench&prefix=p/")
	for _, want := range []string{"objects=2\n", "json_objects=1\n", "json_content_type=application/json\n", "zip_objects=1\n", "json_cache_control=(none)\n"} {
		if !strings.Contains(types, want) {
			t.Errorf("/_types lacks %q:\n%s", want, types)
		}
	}
	if after := get(t, front.URL+"/_stats"); after != stats {
		t.Errorf("/_stats and /_types were counted:\n%s\nthen\n%s", stats, after)
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, body)
	}
	return string(body)
}
