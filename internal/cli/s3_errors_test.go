package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// Bad S3 input gives a clear error that names the bucket (or the
// endpoint), a non-zero exit within seconds, nothing written, and never
// the secret key.
func TestBuildIntoBucketErrors(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	const secret = "wrong-secret-never-printed-0123456789"
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	down.Close()
	replace := func(env []string, key, value string) []string {
		out := []string{key + "=" + value}
		for _, kv := range env {
			if !strings.HasPrefix(kv, key+"=") {
				out = append(out, kv)
			}
		}
		return out
	}
	cases := []struct {
		name    string
		environ []string
		out     string
		want    string
	}{
		{"wrong secret", replace(srv.Environ(), "AWS_SECRET_ACCESS_KEY", secret), srv.URI("mirror", "site"), "mirror"},
		{"missing bucket", srv.Environ(), srv.URI("absent", "site"), "absent"},
		{"endpoint down", replace(srv.Environ(), "AWS_ENDPOINT_URL_S3", "http://"+downAddr), srv.URI("mirror", "site"), downAddr},
		{"no credentials", noCredentials(t, srv.Environ()), srv.URI("mirror", "site"), "no AWS credentials were found for bucket mirror"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t)
			o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
			dir := t.TempDir()
			writeManifest(t, dir, "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/foo\" { versions = \"1.0.0\" }\n"+o.hostBlock("registry.opentofu.org"))
			o.environ = append(append(o.environ, tc.environ...), "XDG_CACHE_HOME="+t.TempDir())
			start := time.Now()
			code, stdout, stderr := o.run(t, dir, "build", "--out", tc.out)
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			if code == ExitOK || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d, want a failure naming %s\n%s%s", code, tc.want, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, secret) || strings.Contains(stdout+stderr, srv.SecretKey) {
				t.Errorf("a secret key was printed:\n%s%s", stdout, stderr)
			}
			if d := time.Since(start); d > 60*time.Second {
				t.Errorf("took %s", d)
			}
			if _, err := os.Stat(filepath.Join(srv.Dir, "absent")); err == nil {
				t.Error("the missing bucket was created")
			}
		})
	}
}

// noCredentials is env without AWS credentials, nor any file or instance
// role the SDK would find some in.
func noCredentials(t *testing.T, env []string) []string {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") && !strings.HasPrefix(kv, "AWS_SESSION_TOKEN=") {
			out = append(out, kv)
		}
	}
	return append(out, "AWS_EC2_METADATA_DISABLED=true", "AWS_SHARED_CREDENTIALS_FILE="+empty, "AWS_CONFIG_FILE="+empty)
}
