package tfconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// testDir is the test directory "tofu test" and "terraform test" read
// besides the root module's own directory.
const testDir = "tests"

// testExts are the test file extensions: Terraform's, and OpenTofu's,
// which win over Terraform's for the same name as .tofu files do.
var testExts = []string{".tofutest.json", ".tofutest.hcl", ".tftest.json", ".tftest.hcl"}

var testFileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "provider", LabelNames: []string{"name"}},
		{Type: "run", LabelNames: []string{"name"}},
	},
}

var runSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "module"}}}

var runModuleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "version"}}}

// testFiles lists the test files of a root module: those in it, then
// those in its tests directory, each in name order, x.tftest.hcl dropped
// when x.tofutest.hcl exists (and the JSON forms alike).
func testFiles(root string) []string {
	var out []string
	for _, dir := range []string{root, filepath.Join(root, testDir)} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && !ignoredFile(e.Name()) && testExt(e.Name()) != "" {
				names = append(names, e.Name())
			}
		}
		for _, name := range names {
			ext := testExt(name)
			if alt := strings.Replace(ext, ".tftest", ".tofutest", 1); alt != ext && slices.Contains(names, strings.TrimSuffix(name, ext)+alt) {
				continue
			}
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

func testExt(name string) string {
	for _, ext := range testExts {
		if strings.HasSuffix(name, ext) {
			return ext
		}
	}
	return ""
}

// addTests adds what the root module's test files need, as "tofu init"
// and Terraform's "providers lock" (1.14.5 and later) do: the providers of
// their provider blocks (mapped through the root module's
// required_providers; mock_provider blocks install nothing), and the
// providers and module calls of the modules their run blocks test (a
// local source, or a registry module "tofu init" installed). Providers
// that only test files need are named in a warning each.
func (l *loader) addTests(root *module) {
	before := map[addrs.Provider]bool{}
	for p := range l.providers {
		before[p] = true
	}
	from := map[addrs.Provider][]string{}
	for _, file := range testFiles(l.root) {
		display := l.displayPath(file)
		body, diags := parseFile(file, display, nil)
		l.report(diags)
		if body == nil {
			continue
		}
		was := map[addrs.Provider]bool{}
		for p := range l.providers {
			was[p] = true
		}
		l.addTestFile(root, file, body)
		for p := range l.providers {
			if !was[p] && !before[p] {
				from[p] = append(from[p], display)
			}
		}
	}
	for _, p := range sortedProviders(l.providers) {
		if files, ok := from[p]; ok {
			l.warn(fmt.Sprintf("%s is needed only by test files (%s); --no-tests leaves it out", p, strings.Join(files, ", ")))
		}
	}
}

// addTestFile adds the needs of one test file.
func (l *loader) addTestFile(root *module, file string, body hcl.Body) {
	content, _, diags := body.PartialContent(testFileSchema)
	l.report(diags)
	if content == nil {
		return
	}
	mg := &merger{diags: &diags, reqs: root.reqs}
	for _, b := range content.Blocks {
		if b.Type == "provider" {
			if p := decodeProvider(b, &diags); p != nil {
				mg.addLocal(p.name, p.rng, p.version)
			}
		}
	}
	l.report(diags)
	l.addNeeds(&module{needs: mg.needs})
	stem := strings.TrimSuffix(filepath.Base(file), testExt(filepath.Base(file)))
	prefix := []string{"test"}
	if rel, err := filepath.Rel(l.root, filepath.Dir(file)); err == nil && rel != "." {
		prefix = append(prefix, strings.Split(filepath.ToSlash(rel), "/")...)
	}
	prefix = append(prefix, stem)
	for _, b := range content.Blocks {
		if b.Type == "run" {
			l.addRun(b, prefix)
		}
	}
}

// addRun reads the module a run block tests, if it names one, as a
// module called from the root under the path test.<dir>.<file>.<run>,
// the key "tofu init" installs it under.
func (l *loader) addRun(b *hcl.Block, prefix []string) {
	rc, _, diags := b.Body.PartialContent(runSchema)
	l.report(diags)
	if rc == nil || len(rc.Blocks) == 0 {
		return
	}
	mc, _, diags := rc.Blocks[0].Body.PartialContent(runModuleSchema)
	l.report(diags)
	if mc == nil || mc.Attributes["source"] == nil {
		return
	}
	var d hcl.Diagnostics
	c := &callDecl{name: b.Labels[0], rng: b.DefRange, sourceSet: true}
	c.source, c.static = literalString(mc.Attributes["source"].Expr, "Invalid module source", "The source of a run block's module must be a literal string.", &d)
	if attr, ok := mc.Attributes["version"]; ok {
		c.versionSet, c.versionAttr = true, attr
		c.version, c.versionDynamic = decodeCallVersion(attr, &d)
	}
	l.report(d)
	if !c.static {
		return
	}
	parent := frame{path: prefix, dir: l.root}
	if real, err := realDir(l.root); err == nil {
		parent.real = real
	}
	l.addRegistryCalls(&parent, []*callDecl{c})
	child, ok := l.resolve(&parent, c)
	if !ok {
		return
	}
	child.parent = nil // tested as a root, as the clients do
	l.walk(child, l.module(child.dir, child.real))
}
