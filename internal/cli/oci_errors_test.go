package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/testnet"
)

// ociFixture is an origin and a real registry that one SSL_CERT_FILE
// trusts (one test CA made both certificates), and a directory with a
// manifest of two providers, hashicorp/foo and hashicorp/bar 1.0.0.
type ociFixture struct {
	o   origin
	srv *registrytest.Server
	dir string
}

func newOCIFixture(t *testing.T) ociFixture {
	t.Helper()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	srv := registrytest.StartWith(t, registrytest.Options{CA: ca})
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	reg.Add("hashicorp", "bar", "1.0.0", "linux_amd64")
	f := ociFixture{o: origin{reg: reg}, srv: srv, dir: t.TempDir()}
	writeManifest(t, f.dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "hashicorp/bar" { versions = "1.0.0" }
`+f.o.hostBlock("registry.opentofu.org"))
	f.o.environ = []string{"SSL_CERT_FILE=" + caFile, "HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}
	return f
}

// template is the usual repository template in the fixture's registry.
func (f ociFixture) template() string {
	return f.srv.Host + "/mirror/${hostname}/${namespace}/${type}"
}

// run runs tfmirror in dir with the fixture's environment and env.
func (f ociFixture) run(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	o := f.o
	o.environ = append(append([]string(nil), f.o.environ...), env...)
	code, stdout, stderr := o.run(t, dir, args...)
	t.Logf("tfmirror %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	return code, stdout, stderr
}

// writes are the requests that change the registry: anything but GET and
// HEAD.
func (f ociFixture) writes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range f.srv.Requests(t) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			out = append(out, r.Method+" "+r.URI)
		}
	}
	return out
}

// noSecret fails when output holds the registry's password (also a part
// of WrongDockerConfig's) or the "auth" value of either Docker config.
func (f ociFixture) noSecret(t *testing.T, output string) {
	t.Helper()
	for _, secret := range []string{
		f.srv.Password,
		base64.StdEncoding.EncodeToString([]byte(f.srv.Username + ":" + f.srv.Password)),
		base64.StdEncoding.EncodeToString([]byte(f.srv.Username + ":wrong-" + f.srv.Password)),
	} {
		if strings.Contains(output, secret) {
			t.Errorf("the output holds a credential of the Docker config:\n%s", output)
		}
	}
}

// wantAll fails unless output holds every one of want.
func wantAll(t *testing.T, what, output string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(output, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, output)
		}
	}
}

// Bad credentials, none, and a registry that is down: a build into the
// registry fails within seconds with an error that names the provider,
// the version, the repository and what went wrong; never prints a
// credential; and writes nothing into the registry.
func TestOCIBuildRegistryErrors(t *testing.T) {
	f := newOCIFixture(t)
	port, err := testnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := fmt.Sprintf("127.0.0.1:%d", port)
	cases := []struct {
		name     string
		env      []string
		template string
		want     []string
	}{
		{
			name:     "wrong credentials",
			env:      []string{"DOCKER_CONFIG=" + f.srv.WrongDockerConfig(t)},
			template: f.template(),
			want:     []string{"nothing was downloaded: reach the registry of registry.opentofu.org/hashicorp/", "the registry refused the credentials (401 Unauthorized)", "credentials for " + f.srv.Host + " were looked for in"},
		},
		{
			name:     "no credentials",
			env:      []string{"DOCKER_CONFIG=" + t.TempDir()},
			template: f.template(),
			want:     []string{"nothing was downloaded: reach the registry of registry.opentofu.org/hashicorp/", "the registry requires credentials, and none were found for it", "credentials for " + f.srv.Host + " were looked for in"},
		},
		{
			name:     "registry down",
			env:      []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir},
			template: down + "/mirror/${hostname}/${namespace}/${type}",
			want:     []string{"nothing was downloaded: reach the registry of registry.opentofu.org/hashicorp/", " in " + down + "/mirror/registry.opentofu.org/hashicorp/", "the registry cannot be reached", "connection refused"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			puts, uploads := len(f.srv.ManifestPuts(t)), f.srv.BlobUploads(t)
			origin := len(f.o.reg.Requests())
			start := time.Now()
			code, stdout, stderr := f.run(t, f.dir, tc.env, "build", "--retries", "1", "--out", "oci://"+tc.template)
			if d := time.Since(start); d > 60*time.Second {
				t.Errorf("the build took %s to fail", d)
			}
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			wantAll(t, "stderr", stderr, tc.want...)
			wantAll(t, "stderr", stderr, " in "+strings.SplitN(tc.template, "/", 2)[0]+"/mirror/registry.opentofu.org/hashicorp/")
			f.noSecret(t, stdout+stderr)
			for _, r := range f.o.reg.Requests()[origin:] {
				if strings.HasSuffix(r, ".zip") {
					t.Errorf("an archive was downloaded before the registry was found unusable: %s", r)
				}
			}
			if got := f.srv.ManifestPuts(t); len(got) != puts {
				t.Errorf("manifests were pushed: %q", got[puts:])
			}
			if got := f.srv.BlobUploads(t); got != uploads {
				t.Errorf("%d blobs were uploaded", got-uploads)
			}
		})
	}
}

// A destination that cannot hold the build is a usage error (exit 2)
// naming the template and the provider, and nothing is written into the
// registry: a template that gives an invalid repository name, or one
// repository for two providers, or uses a variable OpenTofu does not
// have; or a layout other than network.
func TestOCIBuildTemplateErrors(t *testing.T) {
	f := newOCIFixture(t)
	env := []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir}
	host := f.srv.Host
	cases := []struct {
		name     string
		template string
		manifest string // "": the fixture's
		args     []string
		// offline: neither the origin nor the registry is contacted. A
		// template that fits some providers and not others is found
		// while the build plans, after the origin was asked and the
		// registry was read.
		offline bool
		want    []string
	}{
		{
			name:     "upper-case letters",
			template: host + "/Mirror/${type}",
			offline:  true,
			want: []string{`invalid repository template "` + host + `/Mirror/${type}"`, "example.com/example-namespace/example-type",
				`invalid repository "Mirror/example-type"`},
		},
		{
			name:     "unknown variable",
			template: host + "/mirror/${unknown}",
			offline:  true,
			want:     []string{`invalid repository template "` + host + `/mirror/${unknown}"`, "${unknown} is not available"},
		},
		{
			// Found while the build plans: the origin was asked and the
			// registry read, and neither provider is pushed.
			name:     "two providers in one repository",
			template: host + "/mirror/${namespace}",
			want: []string{`the repository template "` + host + `/mirror/${namespace}" gives the same repository ` + host + "/mirror/hashicorp" +
				" for registry.opentofu.org/hashicorp/bar and registry.opentofu.org/hashicorp/foo"},
			offline: true,
		},
		{
			// The one address part that can make a template's repository
			// invalid for some providers only: the manifest refuses it
			// before any destination is opened.
			name:     "a hostname with a port",
			template: f.template(),
			manifest: `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "registry.test:8443/acme/baz" { versions = "1.0.0" }
` + f.o.hostBlock("registry.opentofu.org") + f.o.hostBlock("registry.test:8443"),
			offline: true,
			want:    []string{"provider registry.test:8443/acme/baz has a port in its hostname"},
		},
		{
			name:     "packed layout",
			template: f.template(),
			args:     []string{"--layout", "packed"},
			offline:  true,
			want:     []string{"--out oci://" + f.template() + ": an OCI registry holds provider packages as OpenTofu's oci_mirror reads them; --layout packed needs a directory"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := f.dir
			if tc.manifest != "" {
				dir = t.TempDir()
				writeManifest(t, dir, tc.manifest)
			}
			origin, requests := len(f.o.reg.Requests()), len(f.srv.Requests(t))
			args := append([]string{"build", "--out", "oci://" + tc.template}, tc.args...)
			code, stdout, stderr := f.run(t, dir, env, args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			wantAll(t, "stderr", stderr, tc.want...)
			f.noSecret(t, stdout+stderr)
			if w := f.writes(t); len(w) != 0 {
				t.Errorf("the build wrote into the registry: %q", w)
			}
			if strings.Contains(stdout, "mirrored  ") {
				t.Errorf("the build reports a package as mirrored:\n%s", stdout)
			}
			if tc.offline {
				if n := len(f.o.reg.Requests()) - origin; n != 0 {
					t.Errorf("the build made %d requests to the origin", n)
				}
				if got := f.srv.Requests(t); len(got) != requests {
					t.Errorf("the build contacted the registry: %v", got[requests:])
				}
			}
		})
	}
}

// TestOCITagNotAProvider: a version's tag holds a plain image, not an
// OpenTofu provider index. verify exits 3 naming repository:tag; a build
// refuses to replace it (exit 3, naming the repository and tag), and the
// tag still names the image.
func TestOCITagNotAProvider(t *testing.T) {
	f := newOCIFixture(t)
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+f.o.hostBlock("registry.opentofu.org"))
	env := []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir}
	repoName := f.srv.Host + "/mirror/registry.opentofu.org/hashicorp/foo"
	repo := f.handRepository(t, repoName)
	image := pushImage(t, repo, "1.0.0")
	ref := repoName + ":1.0.0"

	t.Run("verify", func(t *testing.T) {
		code, stdout, stderr := f.run(t, dir, env, "verify", "--config", "mirror.hcl", "oci://"+f.template())
		if code != ExitVerification {
			t.Errorf("exit %d, want %d", code, ExitVerification)
		}
		wantAll(t, "verify", stdout+stderr, ref, "not an OpenTofu provider release",
			fmt.Sprintf("the tag names a %q, not an image index", ocispec.MediaTypeImageManifest))
	})

	t.Run("build", func(t *testing.T) {
		puts, uploads := len(f.srv.ManifestPuts(t)), f.srv.BlobUploads(t)
		code, stdout, stderr := f.run(t, dir, env, "build", "--out", "oci://"+f.template())
		if code != ExitVerification {
			t.Errorf("exit %d, want %d", code, ExitVerification)
		}
		wantAll(t, "stderr", stderr, "push registry.opentofu.org/hashicorp/foo 1.0.0 to "+repoName, ref,
			fmt.Sprintf("the tag holds %s (a %q), not an OpenTofu provider index: tfmirror does not replace it unless told to overwrite", image, ocispec.MediaTypeImageManifest))
		if strings.Contains(stdout, "mirrored  ") {
			t.Errorf("the build reports the package as mirrored:\n%s", stdout)
		}
		if got := f.srv.ManifestPuts(t); len(got) != puts {
			t.Errorf("manifests were pushed: %q", got[puts:])
		}
		if got := f.srv.BlobUploads(t); got != uploads {
			t.Errorf("%d blobs were uploaded", got-uploads)
		}
		desc, err := repo.Resolve(t.Context(), "1.0.0")
		if err != nil || desc.Digest != image {
			t.Errorf("the tag 1.0.0 names %s (%v); it named the image %s", desc.Digest, err, image)
		}
	})
}

// handRepository is a client of a repository of the fixture's registry,
// with its credentials, to push what tfmirror would not.
func (f ociFixture) handRepository(t *testing.T, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(name)
	if err != nil {
		t.Fatal(err)
	}
	repo.Client = &auth.Client{
		Client:     f.srv.CA.Client(),
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(f.srv.Host, auth.Credential{Username: f.srv.Username, Password: f.srv.Password}),
	}
	return repo
}

// pushImage pushes a plain container image manifest (an image config and
// one layer) under tag and returns its digest.
func pushImage(t *testing.T, repo *remote.Repository, tag string) digest.Digest {
	t.Helper()
	ctx := t.Context()
	push := func(mediaType string, data []byte) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
		if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		return desc
	}
	config := push(ocispec.MediaTypeImageConfig, []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	layer := push(ocispec.MediaTypeImageLayer, []byte("not a provider"))
	data, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config,
		Layers:    []ocispec.Descriptor{layer},
	})
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), tag); err != nil {
		t.Fatal(err)
	}
	return desc.Digest
}

// verify of a registry it cannot read (credentials refused) is a failure
// to check (exit 1), not a problem found in the mirror (exit 3).
func TestOCIVerifyCannotRead(t *testing.T) {
	f := newOCIFixture(t)
	env := []string{"DOCKER_CONFIG=" + f.srv.WrongDockerConfig(t)}
	code, stdout, stderr := f.run(t, f.dir, env, "verify", "--config", "mirror.hcl", "oci://"+f.template())
	if code != ExitFailure {
		t.Errorf("exit %d, want %d\n%s%s", code, ExitFailure, stdout, stderr)
	}
	wantAll(t, "stderr", stderr, "the registry refused the credentials")
	f.noSecret(t, stdout+stderr)
}
