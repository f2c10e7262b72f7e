package ocistore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// checkNames requires err to name the provider, version and repository,
// and to hold no secret.
func checkNames(t *testing.T, err error, secrets []string, names ...string) {
	t.Helper()
	msg := err.Error()
	for _, n := range names {
		if !strings.Contains(msg, n) {
			t.Errorf("the error does not name %q:\n%s", n, msg)
		}
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			t.Errorf("the error holds a secret:\n%s", msg)
		}
	}
}

func TestCredentialErrors(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	repo := srv.Host + "/tf/registry.opentofu.org/hashicorp/foo"
	secrets := []string{srv.Password}

	t.Run("wrong password", func(t *testing.T) {
		wrong := srv.WrongDockerConfig(t)
		s := openStore(t, "oci://"+template(srv), []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + wrong})
		_, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
		if !errors.Is(err, ocistore.ErrUnauthorized) {
			t.Fatalf("Push with a wrong password: %v, want ErrUnauthorized", err)
		}
		checkNames(t, err, append(secrets, "wrong-"+srv.Password), "registry.opentofu.org/hashicorp/foo", "1.0.0", repo, filepath.Join(wrong, "config.json"))
		t.Log(err)
		if _, err := s.Versions(ctx, foo); !errors.Is(err, ocistore.ErrUnauthorized) {
			t.Errorf("Versions with a wrong password: %v", err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		empty := t.TempDir()
		s := openStore(t, "oci://"+template(srv), []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + empty, "HOME=" + t.TempDir()})
		_, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
		if !errors.Is(err, ocistore.ErrNoCredentials) {
			t.Fatalf("Push without credentials: %v, want ErrNoCredentials", err)
		}
		checkNames(t, err, secrets, "registry.opentofu.org/hashicorp/foo", "1.0.0", repo)
		t.Log(err)
	})
	t.Run("explicit credentials win", func(t *testing.T) {
		s := openStore(t, "oci://"+template(srv), []string{
			"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + srv.WrongDockerConfig(t),
			ocistore.EnvUsername + "=" + srv.Username, ocistore.EnvPassword + "=" + srv.Password,
		})
		if _, err := s.Push(ctx, rel.Release, ocistore.PushOptions{}); err != nil {
			t.Fatalf("Push with %s: %v", ocistore.EnvUsername, err)
		}
		if err := s.Ping(ctx, foo); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
	t.Run("half explicit credentials", func(t *testing.T) {
		s := openStore(t, "oci://"+template(srv), []string{ocistore.EnvUsername + "=u"})
		if _, err := s.Push(ctx, rel.Release, ocistore.PushOptions{}); err == nil || !strings.Contains(err.Error(), ocistore.EnvPassword) {
			t.Errorf("Push with only a user name: %v", err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		s := openStore(t, "oci://"+template(srv), []string{"DOCKER_CONFIG=" + srv.DockerConfigDir, "SSL_CERT_FILE=" + writeOtherCA(t)})
		_, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
		if !errors.Is(err, ocistore.ErrUntrusted) {
			t.Fatalf("Push to an untrusted registry: %v, want ErrUntrusted", err)
		}
		checkNames(t, err, secrets, "registry.opentofu.org/hashicorp/foo", "1.0.0", repo, "SSL_CERT_FILE")
	})
}

// writeOtherCA writes a CA file that does not hold the registry's CA.
func writeOtherCA(t *testing.T) string {
	t.Helper()
	other := registrytest.StartWith(t, registrytest.Options{Anonymous: true})
	other.Stop()
	return other.CAFile
}

func TestRegistryDown(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	srv.Stop()
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	repo := srv.Host + "/tf/registry.opentofu.org/hashicorp/foo"
	_, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if !errors.Is(err, ocistore.ErrUnreachable) {
		t.Fatalf("Push to a stopped registry: %v, want ErrUnreachable", err)
	}
	checkNames(t, err, nil, "registry.opentofu.org/hashicorp/foo", "1.0.0", repo)
	t.Log(err)
	_, _, err = s.Release(ctx, foo, rel.Version)
	if !errors.Is(err, ocistore.ErrUnreachable) {
		t.Fatalf("Release from a stopped registry: %v", err)
	}
	checkNames(t, err, nil, "registry.opentofu.org/hashicorp/foo", "1.0.0", repo)
	if _, err := s.Versions(ctx, foo); !errors.Is(err, ocistore.ErrUnreachable) {
		t.Errorf("Versions from a stopped registry: %v", err)
	}
	if err := s.Ping(ctx, foo); !errors.Is(err, ocistore.ErrUnreachable) {
		t.Errorf("Ping of a stopped registry: %v", err)
	}
}

func TestInvalidTemplates(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"oci://registry.example.com", "no repository path"},
		{"oci://registry.example.com/${foo}/${type}", "${foo} is not available"},
		{"oci://registry.example.com/%{ if true }x%{ endif }", "directives"},
		{"oci://registry.example.com/Upper/${type}", "invalid repository template"},
		{"oci://https://registry.example.com/${type}", "invalid repository template"},
		{"oci:///tmp", `it gives "/tmp", which is not a registry host followed by a slash and a repository name`},
		{"oci://registry.example.com/x/${type}:latest", "names a tag"},
		{"oci://registry.example.com/${type", "unclosed"},
		{"oci-layout://", "no directory"},
		{"docker://registry.example.com/x", "want oci://"},
	} {
		_, err := ocistore.New(context.Background(), tc.ref, ocistore.Config{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q) = %v, want an error saying %q", tc.ref, err, tc.want)
		}
	}
	// Valid forms.
	for _, ref := range []string{
		"oci://registry.example.com/${hostname}/${namespace}/${type}",
		"oci://registry.example.com:5000/tf/${ namespace }-${type}",
		"oci://registry.example.com/tf/${namespace}/${~type~}",
	} {
		if _, err := ocistore.New(context.Background(), ref, ocistore.Config{}); err != nil {
			t.Errorf("New(%q): %v", ref, err)
		}
	}

	// A template that is valid for some providers and not for others:
	// a hostname with a port cannot be part of a repository path.
	s := openStore(t, "oci://registry.example.com/m/${hostname}/${namespace}/${type}", nil)
	p := addrs.MustParseProvider("localhost:8443/acme/foo")
	_, err := s.Repository(p)
	if err == nil {
		t.Fatal("Repository of localhost:8443/acme/foo: no error")
	}
	checkNames(t, err, nil, "localhost:8443/acme/foo", "registry.example.com/m/${hostname}/${namespace}/${type}", "registry.example.com/m/localhost:8443/acme/foo")
	rel := newRelease(t, p, "1.0.0", "", "linux_amd64")
	if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err == nil || !strings.Contains(err.Error(), "localhost:8443/acme/foo") {
		t.Errorf("Push into an invalid repository: %v", err)
	}
	// IDN hostnames are rendered in their ASCII form, as OpenTofu does.
	idn := addrs.MustParseProvider("bücher.example/acme/foo")
	if name, err := s.Repository(idn); err != nil || name != "registry.example.com/m/xn--bcher-kva.example/acme/foo" {
		t.Errorf("Repository(%s) = %q, %v", idn, name, err)
	}
}

// TestRefusedMediaTypes: a registry that refuses the index's media type
// (as GitLab's allow-list may) gives an error saying so, and leaves no
// tag.
func TestRefusedMediaTypes(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	proxy := startProxy(t, srv, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") && r.Header.Get("Content-Type") == "application/vnd.oci.image.index.v1+json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errors":[{"code":"MANIFEST_INVALID","message":"manifest invalid","detail":"invalid media type"}]}`))
			return true
		}
		return false
	})
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	s := openStore(t, "oci://"+proxy.host+"/tf/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + proxy.dockerConfig})
	_, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if !errors.Is(err, ocistore.ErrRefused) {
		t.Fatalf("Push to a registry refusing the index: %v, want ErrRefused", err)
	}
	checkNames(t, err, []string{srv.Password}, "registry.opentofu.org/hashicorp/foo", "1.0.0", proxy.host+"/tf/registry.opentofu.org/hashicorp/foo", "application/vnd.opentofu.provider")
	t.Log(err)
	if _, found, err := s.Release(ctx, foo, rel.Version); found || err != nil {
		t.Errorf("after the refused push: found %v, %v; want no tag", found, err)
	}
}

// TestMissingRepository: a registry that does not create repositories on
// push (Amazon ECR) answers 404; the error says what to do.
func TestMissingRepository(t *testing.T) {
	srv := registrytest.Start(t)
	proxy := startProxy(t, srv, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}`))
			return true
		}
		return false
	})
	rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64")
	s := openStore(t, "oci://"+proxy.host+"/tf/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + proxy.dockerConfig})
	_, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{})
	if !errors.Is(err, ocistore.ErrNoRepository) {
		t.Fatalf("Push into a missing repository: %v, want ErrNoRepository", err)
	}
	checkNames(t, err, nil, "registry.opentofu.org/hashicorp/foo", "1.0.0", proxy.host+"/tf/registry.opentofu.org/hashicorp/foo")
	t.Log(err)
}

// testProxy is a TLS reverse proxy in front of a registry, with its own
// Docker config file holding the registry's credentials for the proxy's
// host.
type testProxy struct {
	host         string
	dockerConfig string
}

// startProxy forwards every request to srv unless intercept answers it.
func startProxy(t *testing.T, srv *registrytest.Server, intercept func(http.ResponseWriter, *http.Request) bool) *testProxy {
	t.Helper()
	upstream, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = srv.CA.Client().Transport
	rp.ErrorLog = log.New(io.Discard, "", 0) // requests cancelled by a failing push
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if intercept != nil && intercept(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	ts.TLS = srv.CA.TLSConfig(t, "localhost", "127.0.0.1")
	ts.StartTLS()
	t.Cleanup(ts.Close)
	p := &testProxy{host: strings.TrimPrefix(ts.URL, "https://"), dockerConfig: t.TempDir()}
	cfg := `{"auths": {"` + p.host + `": {"auth": "` + basic(srv.Username, srv.Password) + `"}}}`
	if err := os.WriteFile(filepath.Join(p.dockerConfig, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// lyingRegistry is a proxy in front of a real registry that plays one
// whose HEAD says it holds the empty config blob while this repository
// does not (as some answer for a blob stored for another repository), and
// which refuses the manifests that name it (MANIFEST_BLOB_UNKNOWN, as
// registries that check a manifest's config do) until it is uploaded; the
// real one does not check configs.
type lyingRegistry struct {
	*testProxy
	lies, refused atomic.Int64
	uploaded      atomic.Bool
}

func startLyingRegistry(t *testing.T, srv *registrytest.Server) *lyingRegistry {
	empty := ocispec.DescriptorEmptyJSON.Digest.String()
	l := &lyingRegistry{}
	l.testProxy = startProxy(t, srv, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/blobs/"+empty):
			l.lies.Add(1)
			w.Header().Set("Content-Length", strconv.Itoa(len(ocispec.DescriptorEmptyJSON.Data)))
			w.Header().Set("Docker-Content-Digest", empty)
			w.WriteHeader(http.StatusOK)
			return true
		case r.Method == http.MethodPut && r.URL.Query().Get("digest") == empty:
			l.uploaded.Store(true)
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") && !l.uploaded.Load():
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(empty)) {
				l.refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"errors":[{"code":"MANIFEST_BLOB_UNKNOWN","message":"blob unknown to registry","detail":"` + empty + `"}]}`))
				return true
			}
		}
		return false
	})
	return l
}

// provoked fails the test unless the registry lied, refused a manifest
// and got the blob in the end.
func (l *lyingRegistry) provoked(t *testing.T) {
	t.Helper()
	if l.lies.Load() == 0 || l.refused.Load() == 0 || !l.uploaded.Load() {
		t.Fatalf("the registry lied %d times, refused %d manifests, got the blob %v: the test did not provoke the failure", l.lies.Load(), l.refused.Load(), l.uploaded.Load())
	}
}

// TestHeadThatLiesAboutABlob: a push through a registry whose HEAD lies
// about a blob runs again, uploading every blob, and succeeds: the
// release is whole.
func TestHeadThatLiesAboutABlob(t *testing.T) {
	srv := registrytest.Start(t)
	l := startLyingRegistry(t, srv)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	s := openStore(t, "oci://"+l.host+"/tf/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + l.dockerConfig})
	rep, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatalf("Push through a registry whose HEAD lies: %v", err)
	}
	l.provoked(t)
	if _, found, err := s.Release(t.Context(), foo, rel.Version); !found || err != nil {
		t.Errorf("after the push (%+v): found %v, %v; want the tag", rep, found, err)
	}
	if _, err := s.ReadRecord(t.Context(), foo, rel.Version); err != nil {
		t.Errorf("the release's provenance: %v", err)
	}
}

// TestModuleHeadThatLiesAboutABlob is the same for a module package.
func TestModuleHeadThatLiesAboutABlob(t *testing.T) {
	srv := registrytest.Start(t)
	l := startLyingRegistry(t, srv)
	s := openStore(t, "oci://"+l.host+"/modules/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + l.dockerConfig})
	z := newModuleZip(t, moduleFiles("hello"))
	pkg := mustPushModule(t, s, netModule, "1.0.0", z)
	l.provoked(t)
	if got := openModule(t, s, netModule, pkg); !bytes.Equal(got, z.data) {
		t.Errorf("the module read back is %d bytes, not the %d pushed", len(got), len(z.data))
	}
}
