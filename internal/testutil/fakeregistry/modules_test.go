package fakeregistry

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
)

func TestModules(t *testing.T) {
	f := newFixture(t)
	f.reg.AddModule("acme/net/aws", "1.0.0", "./archive.tar.gz", false)
	f.reg.AddModule("acme/net/aws", "1.1.0", "git::https://example.com/net.git?ref=v1.1.0", true)
	f.reg.AddModule("acme/net/aws", "1.0.0", "https://example.com/net-1.0.0.tar.gz", false) // replaces

	discoURL := f.reg.URL + DiscoveryPath
	var disco map[string]string
	f.getJSON(t, discoURL, &disco)
	base := resolve(t, discoURL, disco["modules.v1"])
	if base != f.reg.ModulesURL || f.reg.ModulesURL != f.reg.URL+"/v1/modules/" {
		t.Fatalf("modules.v1 = %s, ModulesURL = %s", base, f.reg.ModulesURL)
	}

	var versions map[string]any
	f.getJSON(t, f.reg.URL+ModuleVersionsPath("acme/net/aws"), &versions)
	want := map[string]any{"modules": []any{map[string]any{"versions": []any{
		map[string]any{"version": "1.0.0"}, map[string]any{"version": "1.1.0"},
	}}}}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	var loc map[string]string
	f.getJSON(t, base+"acme/net/aws/1.0.0/download", &loc)
	if diff := cmp.Diff(map[string]string{"location": "https://example.com/net-1.0.0.tar.gz"}, loc); diff != "" {
		t.Errorf("location (-want +got):\n%s", diff)
	}
	body, h := f.get(t, f.reg.URL+ModuleDownloadPath("acme/net/aws", "1.1.0"), http.StatusNoContent)
	if got := h.Get("X-Terraform-Get"); got != "git::https://example.com/net.git?ref=v1.1.0" || len(body) != 0 {
		t.Errorf("204 answer: X-Terraform-Get %q, body %q", got, body)
	}

	f.get(t, f.reg.URL+ModuleVersionsPath("acme/other/aws"), http.StatusNotFound)
	f.get(t, f.reg.URL+ModuleDownloadPath("acme/net/aws", "9.9.9"), http.StatusNotFound)
	f.get(t, f.reg.URL+ModuleDownloadPath("acme/other/aws", "1.0.0"), http.StatusNotFound)

	wantCounts := map[string]int{"acme/net/aws/1.0.0": 1, "acme/net/aws/1.1.0": 1, "acme/net/aws/9.9.9": 1, "acme/other/aws/1.0.0": 1}
	if diff := cmp.Diff(wantCounts, f.reg.ModuleRequests()); diff != "" {
		t.Errorf("ModuleRequests (-want +got):\n%s", diff)
	}
}

// TestModulesFaults: transport faults apply to module paths, and faulted
// requests count.
func TestModulesFaults(t *testing.T) {
	f := newFixture(t)
	f.reg.AddModule("acme/net/aws", "1.0.0", "/files/net.tgz", false)
	path := ModuleDownloadPath("acme/net/aws", "1.0.0")
	f.reg.FailTimes(path, http.StatusServiceUnavailable, 1)
	f.get(t, f.reg.URL+path, http.StatusServiceUnavailable)
	f.get(t, f.reg.URL+path, http.StatusOK)
	if got := f.reg.ModuleRequests()["acme/net/aws/1.0.0"]; got != 2 {
		t.Errorf("ModuleRequests = %d, want 2", got)
	}
}

// TestModulesConcurrent adds and serves modules at the same time (run
// with -race).
func TestModulesConcurrent(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		version := []string{"1.0.0", "1.0.1", "1.0.2", "1.0.3", "1.0.4", "1.0.5", "1.0.6", "1.0.7"}[i]
		go func() {
			defer wg.Done()
			f.reg.AddModule("acme/net/aws", version, "./"+version+".tgz", i%2 == 0)
		}()
		go func() {
			defer wg.Done()
			resp, err := f.client.Get(f.reg.URL + ModuleVersionsPath("acme/net/aws"))
			if err == nil {
				var doc regproto.ModuleVersions
				_ = json.NewDecoder(resp.Body).Decode(&doc)
				resp.Body.Close()
			}
			_ = f.reg.ModuleRequests()
		}()
	}
	wg.Wait()
	var doc regproto.ModuleVersions
	f.getJSON(t, f.reg.URL+ModuleVersionsPath("acme/net/aws"), &doc)
	if len(doc.Modules) != 1 || len(doc.Modules[0].Versions) != 8 {
		t.Errorf("versions: %+v", doc)
	}
}

// TestGenerateModules: every module not added has version 1.0.0, whose
// archive holds what the generator gives it.
func TestGenerateModules(t *testing.T) {
	f := newFixture(t)
	f.reg.AddModule("acme/net/aws", "1.0.0", "https://example.com/net.tar.gz", false)
	f.reg.GenerateModules(func(module string) map[string]string {
		return map[string]string{"main.tf": "# " + module + "\n"}
	})
	var versions map[string]any
	f.getJSON(t, f.reg.URL+ModuleVersionsPath("acme/any7/aws"), &versions)
	want := map[string]any{"modules": []any{map[string]any{"versions": []any{map[string]any{"version": "1.0.0"}}}}}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	var loc map[string]string
	f.getJSON(t, f.reg.URL+ModuleDownloadPath("acme/any7/aws", "1.0.0"), &loc)
	if loc["location"] != "/files/generated/acme/any7/aws.tar.gz" {
		t.Fatalf("location %q", loc["location"])
	}
	body, _ := f.get(t, f.reg.URL+loc["location"], http.StatusOK)
	file := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	entries := targz.Read(t, file)
	if len(entries) != 1 || entries[0].Header.Name != "main.tf" || string(entries[0].Data) != "# acme/any7/aws\n" {
		t.Errorf("archive %+v", entries)
	}
	f.get(t, f.reg.URL+ModuleDownloadPath("acme/any7/aws", "2.0.0"), http.StatusNotFound)
	f.getJSON(t, f.reg.URL+ModuleDownloadPath("acme/net/aws", "1.0.0"), &loc)
	if loc["location"] != "https://example.com/net.tar.gz" {
		t.Errorf("an added module: location %q", loc["location"])
	}
}
