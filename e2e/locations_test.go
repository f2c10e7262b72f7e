package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// TestLocations runs every command that reads or writes a location, with
// every kind of location it accepts, against servers that require
// something of their clients, once with what the server requires (each
// run passes) and once without (each run fails, naming the server and
// what was missing):
//
//   - https, mutual TLS: nginx with a certificate of a private CA that
//     refuses clients without a certificate of that CA (400). Given: the
//     manifest (--config) has a client_certificate block for the host, and
//     SSL_CERT_FILE trusts the CA. Without the block the error names the
//     host and says a client_certificate block may be what is missing.
//   - https, private CA: the same mirror served by nginx without a client
//     certificate. Given: SSL_CERT_FILE; without it the error names the
//     host and a certificate problem.
//   - oci://: a registry over TLS (private CA) with Docker's token
//     authentication. Given: a Docker config (DOCKER_CONFIG) or
//     TFMIRROR_OCI_USERNAME and TFMIRROR_OCI_PASSWORD, and the token
//     service (on another port) named in oci_token_realms; without credentials
//     the error names the registry and says that no credentials were
//     found (not that the ones given lack a scope).
//   - s3://: versitygw over TLS (private CA). Given: its credentials in the
//     AWS_* environment; with a wrong secret key the error names the bucket
//     and says the credentials were refused.
//
// Every command reads one settings value for all of these (the manifest's
// client_certificate blocks, SSL_CERT_FILE, the credentials): a command
// that ignores one of them fails its cell. The mirror the cells read is
// built once by tfmirror from the fake origin and published into each
// server. No output may hold a password or secret key.
func TestLocations(t *testing.T) {
	pkgs := bucketPackages
	f := newFixture(t, pkgs, bucketManifest)
	caEnv := f.env // SSL_CERT_FILE: the origin, nginx, the registry and versitygw share f.ca
	// providersOnly selects what the fixture publishes and names no origin:
	// for the cells that read a mirror.
	providersOnly := upstreamManifest(pkgs, "")
	originManifest := bucketManifest(f.reg.ServicesURL)

	httpsCells := func(base string) []locationCell {
		return []locationCell{
			{
				name: "build --from https", manifest: providersOnly,
				args:  func(c *locationRun) []string { return []string{"build", "--from", base, "--out", c.out} },
				check: checkBuiltDir(pkgs),
			},
			{
				name: "build network_mirror https", manifest: upstreamManifest(pkgs, mirrorOnlyCLI(base)),
				args:  func(c *locationRun) []string { return []string{"build", "--out", c.out} },
				check: checkBuiltDir(pkgs),
			},
			lockCell("lock --mirror https", base, providersOnly, pkgs),
			verifyCell("verify https", base, providersOnly, pkgs),
		}
	}

	t.Run("https client certificate", func(t *testing.T) {
		caFile, _, _ := f.ca.WriteFiles(t, t.TempDir())
		base := startNginxServer(t, f.site, f.ca, func(port int, certFile, keyFile, root string) string {
			return strings.Replace(defaultServerBlock(port, certFile, keyFile, root), "root ",
				"ssl_verify_client on;\n\t\tssl_client_certificate "+nginxQuote(caFile)+";\n\t\troot ", 1)
		})
		certFile, keyFile := f.ca.WriteClientFiles(t, t.TempDir(), "locations")
		runLocationCells(t, locationServer{
			granted: []locationAccess{{
				name:     "with client_certificate",
				manifest: fmt.Sprintf("client_certificate %q {\n  cert_file = %q\n  key_file  = %q\n}\n", "127.0.0.1", certFile, keyFile),
				env:      caEnv,
			}},
			refused: locationAccess{name: "without client_certificate", env: caEnv},
			failure: mustMatch(regexp.QuoteMeta(urlHost(base)), `client_certificate`),
		}, httpsCells(base))
	})

	t.Run("https private CA", func(t *testing.T) {
		base := startNginx(t, f.site, f.ca)
		runLocationCells(t, locationServer{
			granted: []locationAccess{{name: "with SSL_CERT_FILE", env: caEnv}},
			refused: locationAccess{name: "without SSL_CERT_FILE"},
			failure: mustMatch(regexp.QuoteMeta(urlHost(base)), `(?i)unknown authority|not trusted|failed to verify certificate`),
		}, httpsCells(base))
	})

	t.Run("oci token", func(t *testing.T) {
		srv := registrytest.StartWithToken(t, f.ca, registrytest.TokenPolicy{Grants: []registrytest.Grant{
			{Prefix: "tf/", Actions: []string{"pull", "push"}},
		}})
		dockerConfig := append(slices.Clone(caEnv), "DOCKER_CONFIG="+srv.DockerConfigDir)
		template := func(repo string) string {
			return "oci://" + srv.Host + "/tf/" + repo + "/${hostname}/${namespace}/${type}"
		}
		// The token service runs on another port of 127.0.0.1: the
		// registry's credentials go there only because the manifest says so.
		realms := fmt.Sprintf("settings {\n  oci_token_realms = { %q = [%q] }\n}\n", srv.Host, strings.TrimPrefix(srv.Tokens.URL, "https://"))
		manifest, err := os.ReadFile(filepath.Join(f.work, "mirror.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(f.work, "oci-realm.hcl"), string(manifest)+"\n"+realms)
		site := template("site")
		if stdout, stderr, code := runTfmirror(t, f.work, dockerConfig, "build", "--config", "oci-realm.hcl", "--out", site); code != 0 {
			t.Fatalf("publishing the mirror into the registry: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		runLocationCells(t, locationServer{
			granted: []locationAccess{
				{name: "with a Docker config", env: dockerConfig, manifest: realms},
				{name: "with TFMIRROR_OCI_USERNAME", manifest: realms, env: append(slices.Clone(caEnv),
					"TFMIRROR_OCI_USERNAME="+srv.Username, "TFMIRROR_OCI_PASSWORD="+srv.Password)},
			},
			refused: locationAccess{name: "without credentials", env: caEnv},
			failure: mustMatch(regexp.QuoteMeta(srv.Host), `(?i)no credentials|none were found`),
			secrets: []string{srv.Password},
		}, []locationCell{
			{
				name: "build --out oci", manifest: originManifest,
				args: func(c *locationRun) []string {
					return []string{"build", "--out", template(fmt.Sprintf("out-%d", c.seq))}
				},
				check: func(t *testing.T, c *locationRun, _ string) {
					repo := fmt.Sprintf("/v2/tf/out-%d/", c.seq)
					if !slices.ContainsFunc(srv.ManifestPuts(t), func(uri string) bool { return strings.HasPrefix(uri, repo) }) {
						t.Errorf("the build pushed no manifest under %s", repo)
					}
				},
			},
			{
				name: "build --from oci", manifest: providersOnly,
				args:  func(c *locationRun) []string { return []string{"build", "--from", site, "--out", c.out} },
				check: checkBuiltDir(pkgs),
			},
			lockCell("lock --mirror oci", site, providersOnly, pkgs),
			verifyCell("verify oci", site, providersOnly, pkgs),
		})
	})

	t.Run("s3", func(t *testing.T) {
		const bucket = "tfm-locations"
		_, certFile, keyFile := f.ca.WriteFiles(t, t.TempDir(), "127.0.0.1", "localhost")
		srv := s3test.StartTLS(t, certFile, keyFile)
		srv.CreateBucket(t, bucket)
		granted := append(slices.Clone(caEnv), srv.Environ()...)
		wrongSecret := "wrong-" + srv.SecretKey
		wrong := append(slices.Clone(granted), "AWS_SECRET_ACCESS_KEY="+wrongSecret)
		site := srv.URI(bucket, "site/")
		buildIntoBucket(t, f, granted, site)
		bundleFile := filepath.Join(t.TempDir(), "mirror-bundle.tar.gz")
		if stdout, stderr, code := runTfmirror(t, f.work, f.env, "bundle", "create", "site", "--out", bundleFile); code != 0 {
			t.Fatalf("bundle create site: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkPrefix := func(prefix string) func(*testing.T, *locationRun, string) {
			return func(t *testing.T, c *locationRun, _ string) {
				t.Helper()
				objects := listBucket(t, srv, bucket, fmt.Sprintf(prefix, c.seq))
				for _, p := range pkgs {
					if _, ok := objects[p.dir()+"/"+p.version+".json"]; !ok {
						t.Errorf("%s: no %s/%s.json", fmt.Sprintf(prefix, c.seq), p.dir(), p.version)
					}
				}
			}
		}
		runLocationCells(t, locationServer{
			granted: []locationAccess{{name: "with credentials", env: granted}},
			refused: locationAccess{name: "with a wrong secret key", env: wrong},
			failure: mustMatch(bucket, `(?i)credentials`),
			secrets: []string{srv.SecretKey, wrongSecret},
		}, []locationCell{
			{
				name: "build --out s3", manifest: originManifest,
				args: func(c *locationRun) []string {
					return []string{"build", "--out", srv.URI(bucket, fmt.Sprintf("out-%d/", c.seq))}
				},
				check: checkPrefix("out-%d/"),
			},
			{
				name: "build --from s3", manifest: providersOnly,
				args:  func(c *locationRun) []string { return []string{"build", "--from", site, "--out", c.out} },
				check: checkBuiltDir(pkgs),
			},
			lockCell("lock --mirror s3", site, providersOnly, pkgs),
			verifyCell("verify s3", site, providersOnly, pkgs),
			{
				name: "bundle create s3", manifest: providersOnly,
				args: func(c *locationRun) []string {
					return []string{"bundle", "create", site, "--out", filepath.Join(c.dir, "bundle.tar.gz")}
				},
				check: func(t *testing.T, c *locationRun, _ string) {
					if info, err := os.Stat(filepath.Join(c.dir, "bundle.tar.gz")); err != nil || info.Size() == 0 {
						t.Errorf("no bundle written: %v", err)
					}
				},
			},
			{
				name: "bundle import --out s3", manifest: providersOnly,
				args: func(c *locationRun) []string {
					return []string{"bundle", "import", bundleFile, "--out", srv.URI(bucket, fmt.Sprintf("import-%d/", c.seq))}
				},
				check: checkPrefix("import-%d/"),
			},
			{
				// The manifest selects everything the mirror holds: a
				// prune that reads the bucket and removes nothing.
				name: "prune --out s3", manifest: providersOnly,
				args: func(*locationRun) []string { return []string{"prune", "--out", site} },
			},
			{
				name: "replica s3", manifest: providersOnly,
				args: func(*locationRun) []string { return []string{"replica", site} },
				check: func(t *testing.T, _ *locationRun, _ string) {
					if objects := listBucket(t, srv, bucket, "site/replica/"); len(objects) == 0 {
						t.Error("no object under site/replica/")
					}
				},
			},
		})
	})
}

// locationCell is one command reading or writing one kind of location.
type locationCell struct {
	name     string
	manifest string                      // mirror.hcl, without what grants access
	files    map[string]string           // more files in the working directory
	args     func(*locationRun) []string // without --config mirror.hcl, which is added
	// check looks at what a run given access left (nil: its exit code 0
	// is enough).
	check func(t *testing.T, c *locationRun, stdout string)
}

// locationRun is one run of a cell.
type locationRun struct {
	dir string // the working directory, holding mirror.hcl
	out string // a directory the run may build into: <dir>/out
	seq int    // distinct for every run of a test, to name fresh prefixes and repositories
}

// locationAccess is what a run gives the server: manifest text appended
// to the cell's and environment variables.
type locationAccess struct {
	name     string
	manifest string
	env      []string
}

// locationServer is a server and what it requires.
type locationServer struct {
	granted []locationAccess // each gives what the server requires
	refused locationAccess   // lacks it
	failure []*regexp.Regexp // what the output of a refused run must match
	secrets []string         // what no output may hold
}

// runLocationCells runs every cell once with every granted access and
// once with the refused one, each in a fresh working directory.
func runLocationCells(t *testing.T, srv locationServer, cells []locationCell) {
	t.Helper()
	seq := 0
	run := func(t *testing.T, cell locationCell, access locationAccess) (stdout, stderr string, code int) {
		t.Helper()
		seq++
		c := &locationRun{dir: t.TempDir(), seq: seq}
		c.out = filepath.Join(c.dir, "out")
		writeFile(t, filepath.Join(c.dir, "mirror.hcl"), cell.manifest+"\n"+access.manifest)
		for name, content := range cell.files {
			writeFile(t, filepath.Join(c.dir, name), content)
		}
		stdout, stderr, code = runTfmirror(t, c.dir, access.env, withConfig(cell.args(c))...)
		for _, secret := range srv.secrets {
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("the output holds a secret (%.6s...)", secret)
			}
		}
		if code == 0 && cell.check != nil {
			cell.check(t, c, stdout)
		}
		return stdout, stderr, code
	}
	for _, cell := range cells {
		t.Run(cell.name, func(t *testing.T) {
			for _, access := range srv.granted {
				t.Run(access.name, func(t *testing.T) {
					if stdout, stderr, code := run(t, cell, access); code != 0 {
						t.Errorf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
					}
				})
			}
			t.Run(srv.refused.name, func(t *testing.T) {
				stdout, stderr, code := run(t, cell, srv.refused)
				if code == 0 {
					t.Fatalf("exit 0, want a failure\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
				}
				for _, want := range srv.failure {
					if !want.MatchString(stdout + stderr) {
						t.Errorf("exit %d, but the output does not match %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
					}
				}
			})
		})
	}
}

// withConfig puts --config mirror.hcl after the command's name (after
// both words of "bundle create" and "bundle import").
func withConfig(args []string) []string {
	n := 1
	if args[0] == "bundle" {
		n = 2
	}
	return slices.Concat(args[:n], []string{"--config", "mirror.hcl"}, args[n:])
}

// lockCell is `lock --mirror LOCATION .` in a configuration requiring
// every package of pkgs, which must be locked at its version.
func lockCell(name, location, manifest string, pkgs []pkgVersion) locationCell {
	return locationCell{
		name: name, manifest: manifest,
		files: map[string]string{"main.tf": upstreamMainTF(pkgs)},
		args:  func(*locationRun) []string { return []string{"lock", "--mirror", location, "."} },
		check: func(t *testing.T, c *locationRun, _ string) {
			t.Helper()
			locked := parseLock(t, filepath.Join(c.dir, ".terraform.lock.hcl"))
			for _, p := range pkgs {
				if e, ok := locked[p.addr()]; !ok || e.Version != p.version || len(e.Hashes) == 0 {
					t.Errorf("lock file: %s %+v, want version %s with hashes", p.addr(), e, p.version)
				}
			}
		},
	}
}

// verifyCell is `verify LOCATION`, which must check every package of
// pkgs (one version of each provider) and find no problem.
func verifyCell(name, location, manifest string, pkgs []pkgVersion) locationCell {
	return locationCell{
		name: name, manifest: manifest,
		args: func(*locationRun) []string { return []string{"verify", location} },
		check: func(t *testing.T, _ *locationRun, stdout string) {
			t.Helper()
			want := fmt.Sprintf("%d providers, %d versions, ", len(pkgs), len(pkgs))
			if !strings.Contains(stdout, want) || !strings.Contains(stdout, ": 0 problems") {
				t.Errorf("verify does not report %q and 0 problems:\n%s", want, stdout)
			}
		},
	}
}

// checkBuiltDir checks that the run built every package of pkgs into its
// out directory.
func checkBuiltDir(pkgs []pkgVersion) func(*testing.T, *locationRun, string) {
	return func(t *testing.T, c *locationRun, _ string) {
		t.Helper()
		for _, p := range pkgs {
			for _, name := range []string{p.version + ".json", p.zip("linux_amd64")} {
				if _, err := os.Stat(filepath.Join(c.out, filepath.FromSlash(p.dir()), name)); err != nil {
					t.Error(err)
				}
			}
		}
	}
}

// mustMatch compiles the patterns.
func mustMatch(patterns ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		out[i] = regexp.MustCompile(p)
	}
	return out
}

// urlHost is the host:port of an https:// base URL.
func urlHost(base string) string {
	host, _, _ := strings.Cut(strings.TrimPrefix(base, "https://"), "/")
	return host
}
