package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// buildTree builds reqs with the given tree limits and returns the report
// and the module versions published.
func buildTree(t *testing.T, f *fakeModules, lim ModuleTreeLimits, reqs ...ModuleRequirement) (*Report, int) {
	t.Helper()
	root := t.TempDir()
	tree, err := layout.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &ModuleBuilder{Source: f, Fetcher: f, Calls: f, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Tree: lim}
	r := &Report{}
	b.Build(context.Background(), reqs, r)
	mods, err := tree.Modules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	for _, m := range mods {
		vs, err := tree.ModuleVersions(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		published += len(vs)
	}
	return r, published
}

// limitError returns the one *ModuleLimitError of the report (the
// build's errors and its module versions').
func limitError(t *testing.T, r *Report) *ModuleLimitError {
	t.Helper()
	var found *ModuleLimitError
	errs := append([]error(nil), r.Errors...)
	for _, res := range r.Modules {
		if res.Err != nil {
			errs = append(errs, res.Err)
		}
	}
	for _, err := range errs {
		var e *ModuleLimitError
		if errors.As(err, &e) {
			if found != nil {
				t.Errorf("a second limit error: %v", err)
			}
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no limit error in %v", r.Errors)
	}
	return found
}

// A registry that answers every module with one that calls another new
// one is followed 16 modules deep (the default), and the error names the
// chain from where the first module was required.
func TestModuleChainStopsAtTheDepthLimit(t *testing.T) {
	f := newFakeModules()
	for i := range 40 {
		f.add(fmt.Sprintf("acme/m%d/aws", i), "1.0.0", map[string]string{"CALLS": fmt.Sprintf("acme/m%d/aws 1.0.0\n", i+1)})
	}
	req := ModuleRequirement{Module: addrs.MustParseModule("acme/m0/aws"), From: "mirror.hcl:3"}
	r, published := buildTree(t, f, ModuleTreeLimits{}, req)
	if published != 16 {
		t.Errorf("published %d module versions, want the 16 of the chain", published)
	}
	e := limitError(t, r)
	want := []string{"mirror.hcl:3"}
	for i := range 16 {
		want = append(want, fmt.Sprintf("acme/m%d/aws 1.0.0", i))
	}
	want = append(want, "acme/m16/aws")
	if e.Setting != "max_module_depth" || e.Limit != 16 || strings.Join(e.Chain, "|") != strings.Join(want, "|") {
		t.Errorf("error %+v, want the chain %q", e, want)
	}
	msg := r.Err().Error()
	if !strings.Contains(msg, "module acme/m16/aws: the chain of module calls mirror.hcl:3 → acme/m0/aws 1.0.0 → acme/m1/aws 1.0.0") ||
		!strings.Contains(msg, "acme/m15/aws 1.0.0 → acme/m16/aws is deeper than 16 modules (raise max_module_depth") {
		t.Errorf("message: %s", msg)
	}
	if f.fetches != 16 {
		t.Errorf("%d fetches, want 16", f.fetches)
	}

	// The manifest raises it.
	r, published = buildTree(t, f, ModuleTreeLimits{MaxDepth: 20}, req)
	if e := limitError(t, r); published != 20 || len(e.Chain) != 22 {
		t.Errorf("with a depth of 20: %d published, chain %q", published, e.Chain)
	}
}

// A module that calls more modules than the limit is refused, not
// published, and none of its calls followed; one at the limit is.
func TestModuleFanOutStopsAtTheCallLimit(t *testing.T) {
	f := newFakeModules()
	var calls strings.Builder
	for i := range 101 {
		fmt.Fprintf(&calls, "acme/leaf%d/aws 1.0.0\n", i)
		f.add(fmt.Sprintf("acme/leaf%d/aws", i), "1.0.0", map[string]string{"main.tf": "#"})
	}
	f.add("acme/wide/aws", "1.0.0", map[string]string{"CALLS": calls.String()})
	f.add("acme/top/aws", "1.0.0", map[string]string{"CALLS": "acme/wide/aws 1.0.0\n"})
	r, published := buildTree(t, f, ModuleTreeLimits{}, ModuleRequirement{Module: addrs.MustParseModule("acme/top/aws"), From: "envs/prod/main.tf:7"})
	if published != 1 {
		t.Errorf("published %d module versions, want only acme/top/aws", published)
	}
	e := limitError(t, r)
	if e.Setting != "max_module_calls" || e.Calls != 101 || strings.Join(e.Chain, " → ") != "envs/prod/main.tf:7 → acme/top/aws 1.0.0 → acme/wide/aws 1.0.0" {
		t.Errorf("error %+v", e)
	}
	if msg := r.Err().Error(); !strings.Contains(msg, "module acme/wide/aws 1.0.0: it calls 101 registry modules, more than 100 (raise max_module_calls") {
		t.Errorf("message: %s", msg)
	}

	_, published = buildTree(t, f, ModuleTreeLimits{MaxCalls: 101}, ModuleRequirement{Module: addrs.MustParseModule("acme/top/aws")})
	if published != 103 {
		t.Errorf("with 101 calls allowed: %d published, want 103", published)
	}
}

// A tree wider than the module limit stops there: one error names the
// chain of the first version refused and counts the others.
func TestModuleTreeStopsAtTheModuleLimit(t *testing.T) {
	f := newFakeModules()
	var top strings.Builder
	for i := range 10 {
		fmt.Fprintf(&top, "acme/mid%d/aws 1.0.0\n", i)
		var mid strings.Builder
		for j := range 10 {
			fmt.Fprintf(&mid, "acme/leaf%d-%d/aws 1.0.0\n", i, j)
			f.add(fmt.Sprintf("acme/leaf%d-%d/aws", i, j), "1.0.0", map[string]string{"main.tf": "#"})
		}
		f.add(fmt.Sprintf("acme/mid%d/aws", i), "1.0.0", map[string]string{"CALLS": mid.String()})
	}
	f.add("acme/top/aws", "1.0.0", map[string]string{"CALLS": top.String()})
	r, published := buildTree(t, f, ModuleTreeLimits{MaxModules: 30}, ModuleRequirement{Module: addrs.MustParseModule("acme/top/aws"), From: "mirror.hcl:1"})
	if published != 30 || f.fetches != 30 {
		t.Errorf("published %d, fetched %d, want 30", published, f.fetches)
	}
	e := limitError(t, r)
	if e.Setting != "max_modules" || e.more != 80 || len(e.Chain) != 4 || e.Chain[0] != "mirror.hcl:1" || e.Chain[1] != "acme/top/aws 1.0.0" {
		t.Errorf("error %+v", e)
	}
	if msg := r.Err().Error(); !strings.Contains(msg, "the build reached 30 module versions (raise max_modules") || !strings.Contains(msg, ", and 80 more module versions") {
		t.Errorf("message: %s", msg)
	}
}
