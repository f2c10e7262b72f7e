package e2e

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/goprovider"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// sbomPlatforms are the platforms of the SBOM test's releases
// (goprovider.Vulnerable's; its windows program is stripped).
var sbomPlatforms = []string{"darwin_arm64", "linux_amd64", "windows_amd64"}

// cdxComponent is what the test reads of a CycloneDX component.
type cdxComponent struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Version    string `json:"version"`
	Properties []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"properties"`
}

func (c cdxComponent) property(name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

type cdxDocument struct {
	BOMFormat string `json:"bomFormat"`
	Metadata  struct {
		Component cdxComponent `json:"component"`
	} `json:"metadata"`
	Components []cdxComponent `json:"components"`
}

// sbomLines is what an SBOM says of a program, one line per fact, in the
// form modLines gives debug/buildinfo's.
func sbomLines(t *testing.T, data []byte) []string {
	t.Helper()
	var doc cdxDocument
	if err := json.Unmarshal(data, &doc); err != nil || doc.BOMFormat != "CycloneDX" {
		t.Fatalf("the SBOM is not CycloneDX JSON (%v):\n%s", err, data)
	}
	var out []string
	for _, c := range doc.Components {
		switch c.Type {
		case "platform":
			out = append(out, "go "+c.Version)
		case "application":
			out = append(out, "mod "+c.Name+" "+c.Version)
			for _, p := range c.Properties {
				if setting, ok := strings.CutPrefix(p.Name, "tfmirror:go:build:"); ok {
					out = append(out, "build "+setting+"="+p.Value)
				}
			}
		case "library":
			out = append(out, "dep "+c.Name+" "+c.Version+" "+c.property("tfmirror:go:sum"))
		}
	}
	slices.Sort(out)
	return out
}

// modLines is what `go version -m` (debug/buildinfo) says of a program.
func modLines(info *debug.BuildInfo) []string {
	out := []string{"go " + info.GoVersion, "mod " + info.Main.Path + " " + info.Main.Version}
	for _, s := range info.Settings {
		out = append(out, "build "+s.Key+"="+s.Value)
	}
	for _, d := range info.Deps {
		out = append(out, "dep "+d.Path+" "+d.Version+" "+d.Sum)
	}
	slices.Sort(out)
	return out
}

// TestSBOMOfEveryPackage builds a release whose executables are real Go
// programs (for three platforms, one stripped; with a deliberately old
// golang.org/x/text among their modules) and one whose executable is
// a shell script into a directory, a bucket (versitygw) and a registry
// (docker-registry) at once: each package's SBOM is the same bytes in all
// three (the registry's read back with the oras CLI too) and lists
// exactly what debug/buildinfo (`go version -m`) reads from the program; the shell script's says it has no build information,
// and the build succeeds; verify passes everywhere; a rebuild writes
// nothing anywhere; the catalog page, in headless Chromium, shows and
// links each SBOM.
func TestSBOMOfEveryPackage(t *testing.T) {
	chromium := chromiumBin(t)
	rel := goprovider.Build(t, goprovider.Vulnerable("gomod", "1.0.0"))
	programs := rel.Executables
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.AddArchives("hashicorp", "gomod", "1.0.0", rel.Archives)
	reg.Add("hashicorp", "script", "1.0.0", sbomPlatforms...)

	work := t.TempDir()
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["darwin_arm64", "linux_amd64", "windows_amd64"]

provider "hashicorp/gomod" {
  versions = "1.0.0"
}

provider "hashicorp/script" {
  versions = "1.0.0"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, reg.ServicesURL))
	s3 := s3test.Start(t)
	s3.CreateBucket(t, s3Bucket)
	oci := registrytest.StartWith(t, registrytest.Options{CA: ca})
	template := oci.Host + "/mirror/${hostname}/${namespace}/${type}"
	env := mergeEnv(caFileEnv(t, ca), s3.Environ(), []string{"DOCKER_CONFIG=" + oci.DockerConfigDir})
	site, bucket := filepath.Join(work, "site"), s3.URI(s3Bucket, s3Prefix)
	build := func(t *testing.T) {
		t.Helper()
		stdout, stderr, code := runTfmirror(t, work, env, "build", "--config", "mirror.hcl", "--out", site, "--out", bucket, "--out", "oci://"+template)
		if code != 0 {
			t.Fatalf("tfmirror build: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	}
	build(t)

	store, err := ocistore.New(t.Context(), "oci://"+template, ocistore.Config{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	v := addrs.MustParseVersion("1.0.0")
	read := func(t *testing.T, typ, plat string) []byte {
		t.Helper()
		p, pl := addrs.MustParseProvider("hashicorp/"+typ), addrs.MustParsePlatform(plat)
		rel := layout.SBOMPath(p, v, pl)
		inDir, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("the directory: %v", err)
		}
		inBucket := getObject(t, s3, s3Bucket, s3Prefix+rel)
		inRegistry, err := store.ReadSBOM(t.Context(), p, v, pl)
		if err != nil {
			t.Fatalf("the registry: %v", err)
		}
		if string(inBucket) != string(inDir) || string(inRegistry) != string(inDir) {
			t.Errorf("%s: the SBOM differs between the directory, the bucket and the registry", rel)
		}
		return inDir
	}

	for _, plat := range sbomPlatforms {
		t.Run("go program "+plat, func(t *testing.T) {
			info, err := buildinfo.ReadFile(programs[plat])
			if err != nil {
				t.Fatal(err)
			}
			old := goprovider.VulnerableModule
			if !slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == old.Path && m.Version == old.Version }) {
				t.Fatalf("the program does not depend on %v: %v", old, info)
			}
			if got, want := sbomLines(t, read(t, "gomod", plat)), modLines(info); !slices.Equal(got, want) {
				t.Errorf("the SBOM lists\n  %s\ngo version -m lists\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
		t.Run("shell script "+plat, func(t *testing.T) {
			var doc cdxDocument
			if err := json.Unmarshal(read(t, "script", plat), &doc); err != nil {
				t.Fatal(err)
			}
			if got := doc.Metadata.Component.property("tfmirror:build_information"); got != "none" || len(doc.Components) != 0 {
				t.Errorf("the SBOM of a shell script says build information %q and lists %d components; want none", got, len(doc.Components))
			}
		})
	}

	t.Run("oras discovers the SBOM", func(t *testing.T) {
		checkSBOMWithORAS(t, oci, store, "hashicorp/gomod", read(t, "gomod", "linux_amd64"))
	})

	for _, loc := range []string{site, bucket, "oci://" + template} {
		verifySite(t, work, env, loc)
	}

	t.Run("an SBOM that hides a module is refused", func(t *testing.T) {
		// Leaving the vulnerable module out would hide its advisories
		// from audit; verify reads the executable's own build information.
		file := filepath.Join(site, filepath.FromSlash(layout.SBOMPath(addrs.MustParseProvider("hashicorp/gomod"), v, addrs.MustParsePlatform("linux_amd64"))))
		orig, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		defer writeFile(t, file, string(orig))
		var doc map[string]any
		if err := json.Unmarshal(orig, &doc); err != nil {
			t.Fatal(err)
		}
		old := goprovider.VulnerableModule
		comps := doc["components"].([]any)
		doc["components"] = slices.DeleteFunc(comps, func(c any) bool { return c.(map[string]any)["name"] == old.Path })
		edited, _ := json.MarshalIndent(doc, "", "  ")
		writeFile(t, file, string(edited))
		stdout, stderr, code := runTfmirror(t, work, env, "verify", site)
		if code != 3 || !strings.Contains(stdout+stderr, "not the ones the executable was built from") || !strings.Contains(stdout+stderr, old.Path) {
			t.Errorf("verify of an SBOM without %s: exit %d, want 3 naming it\n%s%s", old.Path, code, stdout, stderr)
		}
	})

	t.Run("rebuild writes nothing", func(t *testing.T) {
		dir, backend := treeHashes(t, site), backendFiles(t, s3, s3Bucket, s3Prefix)
		uploads, manifests := oci.BlobUploads(t), len(oci.ManifestPuts(t))
		build(t)
		if diff := diffTrees(dir, treeHashes(t, site)); diff != "" {
			t.Errorf("the rebuild changed the directory:\n%s", diff)
		}
		if diff := diffTrees(backend, backendFiles(t, s3, s3Bucket, s3Prefix)); diff != "" {
			t.Errorf("the rebuild wrote into the bucket:\n%s", diff)
		}
		if u, m := oci.BlobUploads(t), len(oci.ManifestPuts(t)); u != uploads || m != manifests {
			t.Errorf("the rebuild uploaded %d blobs and %d manifests into the registry", u-uploads, m-manifests)
		}
	})

	t.Run("catalog page", func(t *testing.T) {
		pageURL := (&url.URL{Scheme: "file", Path: filepath.Join(site, htmlcatalog.Path)}).String()
		got := openInChromium(t, chromium, pageURL)
		for _, c := range []struct{ typ, want string }{{"gomod", "built with go"}, {"script", "no build information"}} {
			p := addrs.MustParseProvider("hashicorp/" + c.typ)
			sec := findByAttr(got.dom, "id", "provider-"+p.String())
			if sec == nil {
				t.Fatalf("the page has no section for %s", p)
			}
			for _, plat := range sbomPlatforms {
				row := findByAttr(sec, "data-platform", plat)
				if row == nil {
					t.Fatalf("%s: no row for %s", p, plat)
				}
				cell := findByAttr(row, "class", "sbom")
				if cell == nil || !strings.Contains(domText(cell), c.want) {
					t.Errorf("%s %s: the SBOM cell says %q; want %q", p, plat, domText(cell), c.want)
					continue
				}
				links := domFind(cell, func(n *html.Node) bool { return n.Data == "a" })
				if len(links) != 1 {
					t.Fatalf("%s %s: %d links in the SBOM cell; want one", p, plat, len(links))
				}
				href, _ := domAttr(links[0], "href")
				u, err := url.Parse(pageURL)
				if err == nil {
					u, err = u.Parse(href)
				}
				if err != nil {
					t.Fatal(err)
				}
				linked, err := os.ReadFile(u.Path)
				if want := read(t, c.typ, plat); err != nil || string(linked) != string(want) {
					t.Errorf("%s %s: the link %s does not lead to the SBOM (%v)", p, plat, href, err)
				}
			}
		}
	})
}

// checkSBOMWithORAS reads the linux_amd64 package's SBOM of provider
// 1.0.0 from the registry with the oras CLI, as anyone would: the one
// application/vnd.cyclonedx+json referrer of the platform's manifest,
// whose one layer is want.
func checkSBOMWithORAS(t *testing.T, srv *registrytest.Server, store *ocistore.Store, provider string, want []byte) {
	t.Helper()
	p, v := addrs.MustParseProvider(provider), addrs.MustParseVersion("1.0.0")
	rel, found, err := store.Release(t.Context(), p, v)
	if err != nil || !found {
		t.Fatalf("read the release: found %v, %v", found, err)
	}
	a, ok := rel.Archive(addrs.MustParsePlatform("linux_amd64"))
	if !ok {
		t.Fatal("the release has no linux_amd64 package")
	}
	home := t.TempDir()
	oras := func(args ...string) []byte {
		t.Helper()
		args = append(args, "--ca-file", srv.CAFile, "--registry-config", srv.DockerConfig)
		cmd := exec.CommandContext(t.Context(), orasBin(t), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("oras %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	repo := rel.Repository
	var discovered struct {
		Manifests []struct{ Digest, ArtifactType string } `json:"manifests"`
		Referrers []struct{ Digest, ArtifactType string } `json:"referrers"`
	}
	out := oras("discover", "--format", "json", "--artifact-type", ocistore.ArtifactTypeSBOM, repo+"@"+a.Manifest)
	if err := json.Unmarshal(out, &discovered); err != nil {
		t.Fatalf("oras discover: %v\n%s", err, out)
	}
	refs := append(discovered.Manifests, discovered.Referrers...)
	if len(refs) != 1 || refs[0].ArtifactType != ocistore.ArtifactTypeSBOM {
		t.Fatalf("oras discover lists %+v; want one %s referrer", refs, ocistore.ArtifactTypeSBOM)
	}
	var m struct {
		Layers []struct{ MediaType, Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(oras("manifest", "fetch", repo+"@"+refs[0].Digest), &m); err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != ocistore.MediaTypeSBOM {
		t.Fatalf("the SBOM manifest has layers %+v (%v); want one %s", m.Layers, err, ocistore.MediaTypeSBOM)
	}
	if got := oras("blob", "fetch", "--output", "-", repo+"@"+m.Layers[0].Digest); string(got) != string(want) {
		t.Errorf("oras fetched an SBOM of %d bytes; want the %d the mirror's directory holds", len(got), len(want))
	}
}
