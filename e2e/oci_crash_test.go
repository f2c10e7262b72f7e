package e2e

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// TestOCIPushSurvivesSIGKILL kills builds into a registry at several
// points of their downloads and pushes. Whatever the kill interrupted,
// every tag in the registry must resolve to an index whose manifests and
// archives are all there (tofu treats a dangling tag as fatal); then the
// next build completes the mirror, and verify finds it whole.
func TestOCIPushSurvivesSIGKILL(t *testing.T) {
	c := newCrashRegistry(t)
	srv := registrytest.StartWith(t, registrytest.Options{CA: c.ca})
	c.env = append(c.env, "DOCKER_CONFIG="+srv.DockerConfigDir)
	totalBytes := int64(18 * crashArchiveSize)
	partial := 0 // kills that left some tags but not all

	// Several kill points, so that one lands between the first tag and
	// the last whatever the machine's load (uploads run ahead of tags).
	for i, frac := range []float64{0.1, 0.5, 0.8, 0.95, 0.99} {
		n := int64(frac * float64(totalBytes))
		t.Run(fmt.Sprintf("after_%d_bytes", n), func(t *testing.T) {
			template := fmt.Sprintf("%s/kill%d/${namespace}/${type}", srv.Host, i)
			uri := "oci://" + template
			c.killAfterBytes(t, uri, n)
			tags, archives := checkTagsResolve(t, uri, c.env)
			t.Logf("after the kill: %d tags, %d archives, all resolving", tags, archives)
			if tags > 0 && tags < 6 {
				partial++
			}

			c.build(t, "full.hcl", uri)
			stdout, stderr, code := runTfmirror(t, c.work, c.env, "verify", "--config", "full.hcl", uri)
			if code != 0 || !strings.Contains(stdout, "3 providers, 6 versions, 18 archives checked: 0 problems") {
				t.Fatalf("verify after the rerun: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
	if partial == 0 {
		t.Error("no kill landed between the first and the last tag: the test checked no half-pushed registry")
	}
}

// checkTagsResolve reads every version tag of the crash providers in the
// registry as tofu would: the index, each platform's manifest and the
// whole archive (checked against its digest). It returns how many tags
// and archives it read.
func checkTagsResolve(t *testing.T, uri string, env []string) (tags, archives int) {
	t.Helper()
	store, err := ocistore.New(t.Context(), uri, ocistore.Config{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range crashProviders {
		p := addrs.MustParseProvider("hashicorp/" + typ)
		versions, err := store.Versions(t.Context(), p)
		if err != nil {
			continue // nothing pushed for it yet
		}
		for _, v := range versions {
			tags++
			rel, found, err := store.Release(t.Context(), p, v)
			if err != nil || !found {
				t.Errorf("%s: the tag does not resolve: found %v, %v", store.Name(p, v), found, err)
				continue
			}
			for _, a := range rel.Archives {
				body, err := store.OpenArchive(t.Context(), p, v, a.Platform)
				if err != nil {
					t.Errorf("%s %s: %v", store.Name(p, v), a.Platform, err)
					continue
				}
				if _, err := io.Copy(io.Discard, body); err != nil {
					t.Errorf("%s %s: %v", store.Name(p, v), a.Platform, err)
				}
				_ = body.Close()
				archives++
			}
		}
	}
	return tags, archives
}
