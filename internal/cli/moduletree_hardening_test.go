package cli

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/targz"
)

// publishedModules lists the module packages a build wrote into site.
func publishedModules(t *testing.T, site string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(site, "modules", "registry.opentofu.org", "*", "*", "*", "*.zip"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range found {
		rel, _ := filepath.Rel(filepath.Join(site, "modules", "registry.opentofu.org"), f)
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// downloads counts the requests to the registry's module download
// endpoints so far.
func downloads(o origin) int {
	n := 0
	for _, c := range o.reg.ModuleRequests() {
		n += c
	}
	return n
}

// A hostile registry that answers every module with one that calls
// another new module: the build follows the chain to the depth limit
// (16, or what the manifest's settings say), publishes what it mirrored,
// and fails naming the chain.
func TestBuildStopsAnEndlessModuleChain(t *testing.T) {
	o := newOrigin(t)
	o.reg.GenerateModules(func(module string) map[string]string {
		var n int
		if _, err := fmt.Sscanf(module, "acme/m%d/aws", &n); err != nil {
			return map[string]string{"main.tf": "# " + module}
		}
		return map[string]string{"main.tf": fmt.Sprintf("module \"next\" {\n  source  = \"acme/m%d/aws\"\n  version = \"1.0.0\"\n}\n", n+1)}
	})
	for _, tc := range []struct {
		settings string
		depth    int
	}{{"", 16}, {"settings {\n  max_module_depth = 5\n}\n", 5}} {
		t.Run(fmt.Sprint(tc.depth), func(t *testing.T) {
			before := downloads(o)
			dir := t.TempDir()
			writeManifest(t, dir, moduleManifest(o, "module \"acme/m0/aws\" { versions = \"1.0.0\" }\n"+tc.settings))
			code, stdout, stderr := o.run(t, dir, "build")
			out := stdout + stderr
			chain := "mirror.hcl:1"
			for i := range tc.depth {
				chain += fmt.Sprintf(" → acme/m%d/aws 1.0.0", i)
			}
			chain += fmt.Sprintf(" → acme/m%d/aws is deeper than %d modules (raise max_module_depth", tc.depth, tc.depth)
			if code != ExitFailure || !strings.Contains(out, "the chain of module calls "+chain) {
				t.Errorf("exit %d, want %d and an error naming the chain %q\n%s", code, ExitFailure, chain, out)
			}
			if n := downloads(o) - before; n != tc.depth {
				t.Errorf("%d module versions downloaded, want %d", n, tc.depth)
			}
			if got := publishedModules(t, filepath.Join(dir, "site")); len(got) != tc.depth {
				t.Errorf("published %q, want the %d modules of the chain", got, tc.depth)
			}
		})
	}
}

// A hostile registry whose module calls 400 new modules: refused (100
// calls at most), nothing of it published and none of its calls fetched;
// with the calls allowed, the build stops at max_modules.
func TestBuildStopsAWideModuleFanOut(t *testing.T) {
	o := newOrigin(t)
	o.reg.GenerateModules(func(module string) map[string]string {
		if module != "acme/wide/aws" {
			return map[string]string{"main.tf": "# leaf\n"}
		}
		var calls strings.Builder
		for i := range 400 {
			fmt.Fprintf(&calls, "module \"leaf%d\" {\n  source  = \"acme/leaf%d/aws\"\n  version = \"1.0.0\"\n}\n", i, i)
		}
		return map[string]string{"main.tf": calls.String()}
	})

	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, "module \"acme/wide/aws\" { versions = \"1.0.0\" }\n"))
	code, stdout, stderr := o.run(t, dir, "build")
	want := "module acme/wide/aws 1.0.0: it calls 400 registry modules, more than 100 (raise max_module_calls in the manifest's settings block if that is real); chain: mirror.hcl:1 → acme/wide/aws 1.0.0"
	if code != ExitFailure || !strings.Contains(stdout+stderr, want) {
		t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitFailure, want, stdout, stderr)
	}
	if got := publishedModules(t, filepath.Join(dir, "site")); len(got) != 0 {
		t.Errorf("published %q", got)
	}
	if reqs := o.reg.ModuleRequests(); len(reqs) != 1 {
		t.Errorf("downloaded %v, want only acme/wide/aws", reqs)
	}

	dir = t.TempDir()
	writeManifest(t, dir, moduleManifest(o, "module \"acme/wide/aws\" { versions = \"1.0.0\" }\nsettings {\n  max_module_calls = 400\n  max_modules      = 20\n}\n"))
	code, stdout, stderr = o.run(t, dir, "build")
	want = "the build reached 20 module versions (raise max_modules in the manifest's settings block if it needs more); not mirrored: mirror.hcl:1 → acme/wide/aws 1.0.0 → acme/leaf"
	if code != ExitFailure || !strings.Contains(stdout+stderr, want) || !strings.Contains(stdout+stderr, ", and 380 more module versions") {
		t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitFailure, want, stdout, stderr)
	}
	if got := publishedModules(t, filepath.Join(dir, "site")); len(got) != 20 {
		t.Errorf("published %d module versions, want 20", len(got))
	}
}

// A module archive of a few kilobytes holding a 15 MiB .tf file is
// refused, naming the module and the file, without the gigabytes and the
// seconds parsing it would take.
func TestBuildRefusesAHugeModuleFile(t *testing.T) {
	o := newOrigin(t)
	block := "resource \"null_resource\" \"r%d\" {\n  triggers = { a = \"b\", c = \"d\" }\n}\n"
	var huge strings.Builder
	for i := 0; huge.Len() < 15<<20; i++ {
		fmt.Fprintf(&huge, block, i)
	}
	archive := targz.Pack(t, []targz.Entry{targz.Regular("main.tf", "# huge\n"), targz.Regular("huge.tf", huge.String())}, nil)
	huge.Reset()
	o.reg.AddModule("acme/huge/aws", "1.0.0", o.reg.AddFile("huge.tar.gz", archive), false)
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, "module \"acme/huge/aws\" { versions = \"1.0.0\" }\n"))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	code, stdout, stderr := o.run(t, dir, "build")
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	want := "module acme/huge/aws 1.0.0: read the module's calls: huge.tf: File too large: It holds"
	if code != ExitFailure || !strings.Contains(stdout+stderr, want) {
		t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitFailure, want, stdout, stderr)
	}
	t.Logf("the build allocated %d MiB in %s", (after.TotalAlloc-before.TotalAlloc)>>20, took)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("the build allocated %d MiB", alloc>>20)
	}
	if took > 10*time.Second {
		t.Errorf("the build took %s", took)
	}
	if got := publishedModules(t, filepath.Join(dir, "site")); len(got) != 0 {
		t.Errorf("published %q", got)
	}
}
