// Package s3test runs a real S3-compatible server for tests: the versitygw
// gateway (Apache-2.0) with its POSIX backend on a temporary directory,
// listening on 127.0.0.1.
//
// It owns starting and stopping that server, the credentials and
// environment a client needs to reach it, and a plain SDK client for
// checking what a test's code stored (headers, metadata) independently of
// that code. It mocks nothing: conditional writes, metadata, multipart
// uploads and error codes are the server's own.
//
// The versitygw binary is built once into the tools cache by
// scripts/test (see BinaryPath); without it the tests that need it skip,
// except on CI or under scripts/test, where they fail
// (serverproc.Required). Only tests import this package.
package s3test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
)

// Version is the versitygw release the tests run.
const Version = "v1.8.0"

// Region is the region the server answers for.
const Region = "us-east-1"

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's URL, "http://127.0.0.1:PORT" (https with
	// StartTLS), without a trailing slash.
	Endpoint string
	// AccessKey and SecretKey are the root user's credentials, made
	// randomly for this server.
	AccessKey string
	SecretKey string
	// Dir is the POSIX backend's directory: one subdirectory per bucket.
	Dir string

	proc *serverproc.Process
	log  *serverproc.Output
}

// BinaryPath is where the versitygw binary is expected:
// $TFMIRROR_VERSITYGW if set, else versitygw-VERSION in the tools cache
// ${TFMIRROR_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfmirror/tools},
// the directory scripts/test builds it into.
func BinaryPath() string {
	if p := getenv("TFMIRROR_VERSITYGW"); p != "" {
		return p
	}
	dir := getenv("TFMIRROR_TOOLS_DIR")
	if dir == "" {
		cache := getenv("XDG_CACHE_HOME")
		if cache == "" {
			cache = filepath.Join(getenv("HOME"), ".cache")
		}
		dir = filepath.Join(cache, "tfmirror", "tools")
	}
	return filepath.Join(dir, "versitygw-"+Version)
}

// Start runs a versitygw over plain HTTP on 127.0.0.1 and a free port,
// waits until it answers and stops it when the test ends. Without the
// binary the test is skipped, or fails under CI or scripts/test (see
// serverproc.Required).
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, "", "")
}

// StartTLS is Start over HTTPS with the given PEM certificate and key
// (valid for 127.0.0.1).
func StartTLS(t testing.TB, certFile, keyFile string) *Server {
	t.Helper()
	return start(t, certFile, keyFile)
}

func start(t testing.TB, certFile, keyFile string) *Server {
	t.Helper()
	bin := BinaryPath()
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no versitygw binary at %s (%v): scripts/test builds it; or build it with GOBIN=DIR go install github.com/versity/versitygw/cmd/versitygw@%s and rename DIR/versitygw to %s", bin, err, Version, bin)
		if serverproc.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{
		AccessKey: "AKTEST" + strings.ToUpper(serverproc.RandomHex(7)),
		SecretKey: "secret-" + strings.ToUpper(serverproc.RandomHex(16)),
		Dir:       t.TempDir(),
	}
	scheme := "http"
	if certFile != "" {
		scheme = "https"
	}
	err := serverproc.OnFreePort(func(addr string) error {
		s.Endpoint = scheme + "://" + addr
		return s.run(t.Context(), bin, addr, certFile, keyFile)
	})
	if err != nil {
		t.Fatalf("s3test: versitygw did not start: %v", err)
	}
	t.Cleanup(func() {
		s.proc.Stop()
		if t.Failed() {
			t.Logf("s3test: versitygw output:\n%s", s.log.String())
		}
	})
	return s
}

// run starts the process and waits until it answers HTTP on addr.
func (s *Server) run(ctx context.Context, bin, addr, certFile, keyFile string) error {
	args := []string{"--port", addr, "--region", Region, "--quiet"}
	if certFile != "" {
		args = append(args, "--cert", certFile, "--key", keyFile)
	}
	args = append(args, "posix", s.Dir)
	s.log = &serverproc.Output{Max: 1 << 20}
	cmd := exec.Command(bin, args...)
	// Credentials go through the environment, never the command line; no
	// VGW_* setting of the caller's environment leaks in.
	cmd.Env = []string{
		"PATH=" + getenv("PATH"),
		"HOME=" + getenv("HOME"),
		"ROOT_ACCESS_KEY_ID=" + s.AccessKey,
		"ROOT_SECRET_ACCESS_KEY=" + s.SecretKey,
	}
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	// Any HTTP answer (an S3 error for the anonymous request) means the
	// server is up.
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureProbe()}}
	proc, err := serverproc.Start(ctx, cmd, probe, s.Endpoint+"/")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, s.log.Tail(8<<10))
	}
	s.proc = proc
	return nil
}

// Environ is the AWS_* environment a client (tfmirror in-process, or the
// aws CLI) needs to reach the server: its credentials, region and
// endpoint, no instance metadata and no shared configuration files, so
// the machine's own AWS settings never take part.
func (s *Server) Environ() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + Region,
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

// URI is the s3:// URI of prefix in bucket ("s3://bucket/prefix/").
func (s *Server) URI(bucket, prefix string) string {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return "s3://" + bucket + "/"
	}
	return "s3://" + bucket + "/" + prefix + "/"
}

// Client is a plain SDK client of the server with the root credentials,
// path-style addressing and checksums only where required: for a test to
// look at what was stored without going through the code under test.
func (s *Server) Client(t testing.TB) *s3.Client {
	t.Helper()
	opts := s3.Options{
		Region:                     Region,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if strings.HasPrefix(s.Endpoint, "https:") {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: insecureProbe()}}
	}
	return s3.New(opts)
}

// CreateBucket creates a bucket, failing the test if it cannot.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
}

// BucketExists reports whether the server has the bucket.
func (s *Server) BucketExists(t testing.TB, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Client(t).ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("s3test: list buckets: %v", err)
	}
	for _, b := range out.Buckets {
		if aws.ToString(b.Name) == name {
			return true
		}
	}
	return false
}

// getenv reads the test process's environment: test support, not library
// code.
func getenv(key string) string {
	return os.Getenv(key) //nolint:forbidigo // test support reads the test's own environment
}

// insecureProbe is the TLS configuration of the readiness probe and of the
// checking Client of a StartTLS server: they test the server's answers,
// not its certificate, which the code under test verifies itself.
func insecureProbe() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // see above
}
