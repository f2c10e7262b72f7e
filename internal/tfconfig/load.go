package tfconfig

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Root is the provider requirements of one root module and its
// descendants, and the module registry packages they call.
type Root struct {
	Dir string // as given
	// Providers maps every provider the configuration needs to the version
	// constraint strings declared for it anywhere in the module tree, in a
	// deterministic order (module path, then file, then position). A provider
	// used without any constraint has an empty (non-nil) slice.
	Providers map[addrs.Provider][]Constraint
	// ImpliedHost holds the providers some address of the configuration
	// names without a registry host ("hashicorp/aws", or a local name
	// alone): Terraform reads those on registry.terraform.io, where
	// OpenTofu (and Providers) read them on registry.opentofu.org.
	ImpliedHost map[addrs.Provider]bool
	// Modules maps every module registry package called anywhere in the
	// module tree read (local modules and installed remote ones) to the
	// version constraints written in those calls, in the same order as
	// Providers'. A call's "//subdir" is dropped. Unlike provider
	// constraints, these do not intersect: each call selects its own
	// version. So a package called only without a version has an empty
	// (non-nil) slice, while one also called with a version lists each
	// call without one as a Constraint with an empty Text (any version)
	// at the module block. Constraints use OpenTofu's module syntax
	// (hashicorp/go-version), checked when read.
	Modules map[addrs.Module][]Constraint
	// Warnings: problems that did not stop reading, e.g. a remote module call
	// that is not installed: `module.network (registry.terraform.io/x/y/aws) in main.tf:12 is not installed under .terraform/modules; run "tofu init" to include its providers`.
	Warnings []string
}

// Constraint is one version constraint string as written in a module.
type Constraint struct {
	Text string // exactly as written, e.g. "~> 5.0"
	// Pos is "path/to/file.tf:LINE", the path relative to the parent of the
	// root module directory, with forward slashes.
	Pos string
}

// maxModules bounds the number of module instances read for one root, so
// that a tree of calls that fans out at every level cannot run away.
const maxModules = 10000

// Load reads the root module in dir and every module it calls. Problems
// that make the configuration unusable are returned together as an *Error
// whose message has one "file:line:column: summary: detail" line per
// problem: syntax errors, invalid required_providers entries, invalid
// provider source addresses, provider version constraints rejected by
// hashicorp/go-version NewConstraint or by addrs.ParseConstraints (OpenTofu
// applies both), module version constraints rejected by go-version (the
// only parser OpenTofu applies to them), module registry addresses that
// cannot be mirrored (a host with a port), unreadable local module
// directories, module call cycles, and a module source or version that
// cannot be evaluated (LoadWith). Problems that do not stop reading, such
// as a remote module that is not installed, are returned in Root.Warnings.
// Load is LoadWith with no environment and no --var values: variables
// take their defaults and the root's .tfvars files.
func Load(dir string) (*Root, error) {
	return LoadWith(dir, Options{})
}

// LoadWith is Load with the root module's variables given their values
// from opts (and the directory's variables files), for the module calls
// whose source or version refer to variables or locals. A value that is
// needed and cannot be had (a required variable without one, a reference
// to a resource, a function tfmirror does not evaluate) is a problem that
// names the variable, the module call and its file:line. Unless
// opts.NoTests, what the root module's test files need is added too
// (addTests), each provider only they need named in a warning.
func LoadWith(dir string, opts Options) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Error{Problems: []Problem{{File: dir, Summary: "Failed to read module directory", Detail: err.Error()}}}
	}
	l := newLoader(dir, abs)
	l.shown, l.terraform = dir, opts.Terraform
	l.cwd, _ = os.Getwd()
	real, err := realDir(dir)
	if err != nil {
		return nil, &Error{Problems: []Problem{{
			File:    l.displayPath(dir),
			Summary: "Failed to read module directory",
			Detail:  fmt.Sprintf("Module directory %s does not exist or cannot be read: %s.", dir, errText(err)),
		}}}
	}
	vals, problems := rootValues(dir, opts)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	l.vals, l.environ, l.rootAbs = vals, opts.Environ, abs
	m := l.module(dir, real)
	if m.empty && len(l.problems) == 0 {
		// A root module without configuration is a wrong directory, not a
		// configuration that needs nothing: lock would write an empty lock
		// file there, prune drop what the right directory needs.
		return nil, &Error{Problems: []Problem{{
			File:    l.displayPath(dir),
			Summary: "No configuration files",
			Detail:  noConfiguration(dir),
		}}}
	}
	l.rootReal = real
	l.walk(frame{dir: dir, real: real, logical: "."}, m)
	if !opts.NoTests {
		l.addTests(m)
	}

	if len(l.problems) > 0 {
		return nil, &Error{Problems: l.problems}
	}
	return &Root{Dir: dir, Providers: l.providers, ImpliedHost: l.impliedHost, Modules: l.registryCalls(), Warnings: l.warnings}, nil
}

// noConfiguration says why dir, a root module without configuration
// files, is refused, and what was likely meant when it is a mirror.
func noConfiguration(dir string) string {
	const what = "It holds no OpenTofu or Terraform configuration files (*.tf, *.tf.json, *.tofu, *.tofu.json)"
	for _, mark := range []string{layout.PrivateDirName, layout.CatalogPath} {
		if _, err := os.Lstat(filepath.Join(dir, mark)); err == nil {
			return what + " but is a mirror (it has " + mark + "): a command's arguments are configuration directories; name the mirror with --out (build, prune) or --mirror (lock)."
		}
	}
	return what + ": name the directory of a root module."
}

// newLoader returns a loader for the root module directory root, with
// positions relative to base.
func newLoader(root, base string) *loader {
	return &loader{
		root:        root,
		base:        base,
		modules:     map[string]*module{},
		providers:   map[addrs.Provider][]Constraint{},
		impliedHost: map[addrs.Provider]bool{},
		registry:    map[addrs.Module][]Constraint{},
		seen:        map[string]bool{},
		seenProblem: map[string]bool{},
	}
}

type loader struct {
	root string
	// base is the directory positions are relative to, shown the path
	// they are joined to (displayPath).
	base, shown string
	cwd         string // the working directory, "" if unknown
	rootReal    string // the root directory, symbolic links resolved

	modules  map[string]*module // by real directory
	manifest map[string]manifestRecord
	readMf   bool

	instances int

	providers   map[addrs.Provider][]Constraint
	impliedHost map[addrs.Provider]bool       // Root.ImpliedHost
	registry    map[addrs.Module][]Constraint // module registry packages called
	seen        map[string]bool               // provider or module + constraint + position already added

	// terraform reads files as Terraform does (Options.Terraform).
	terraform bool
	// pkg is, for ModuleCalls, the real directory of the package read:
	// local calls and files must stay inside it, and no other call is
	// followed. "" for Load.
	pkg string
	// budget bounds what ModuleCalls reads of the package; nil for Load.
	budget *readBudget

	problems    []Problem
	seenProblem map[string]bool
	warnings    []string

	// vals are the root module's variable values as given; environ the
	// environment (TF_WORKSPACE); rootAbs the root directory, absolute.
	vals    map[string]rawValue
	environ []string
	rootAbs string
	// evalBytes is what functions made while evaluating the current
	// call's source and version, bounded by maxEvalBytes.
	evalBytes int
}

// frame is one module instance being read.
type frame struct {
	path []string // module call names from the root
	dir  string   // as reached
	real string   // with symlinks resolved, for cycle detection
	// logical is the directory as OpenTofu names it from the root: local
	// sources joined as text from "." (the root, which "tofu -chdir"
	// makes the working directory).
	logical string
	// inPackage is true for modules inside a package that "tofu init"
	// installed, whose local calls the manifest records.
	inPackage bool
	parent    *frame
	// mod is the module read; call the call in the parent that reached
	// it (nil for the root); scope its static evaluator, made on use.
	mod   *module
	call  *callDecl
	scope *staticScope
}

func (f *frame) addr() string {
	if len(f.path) == 0 {
		return "the root module"
	}
	return moduleAddr(f.path)
}

func moduleAddr(p []string) string {
	return "module." + strings.Join(p, ".module.")
}

// module reads a module directory once, however many calls reach it.
func (l *loader) module(dir, real string) *module {
	if m, ok := l.modules[real]; ok {
		return m
	}
	var diags hcl.Diagnostics
	m := l.readModule(dir, &diags)
	l.modules[real] = m
	l.report(diags)
	return m
}

func (l *loader) report(diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning {
			l.warn(diagString(d))
			continue
		}
		p := diagProblem(d)
		if key := p.String(); !l.seenProblem[key] {
			l.seenProblem[key] = true
			l.problems = append(l.problems, p)
		}
	}
}

func (l *loader) warn(s string) {
	for _, w := range l.warnings {
		if w == s {
			return
		}
	}
	l.warnings = append(l.warnings, s)
}

func (l *loader) errorAt(rng hcl.Range, summary, detail string) {
	l.report(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}})
}

// walk records what the module instance needs, then reads the modules it
// calls in name order, so that results come in module path order.
func (l *loader) walk(f frame, m *module) {
	l.instances++
	if l.instances == maxModules+1 {
		l.report(hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Too many modules",
			Detail:   fmt.Sprintf("The configuration in %s calls more than %d module instances.", l.root, maxModules),
		}})
	}
	if l.instances > maxModules {
		return
	}
	l.addNeeds(m)
	f.mod = m
	calls := l.staticCalls(&f, m)
	l.addRegistryCalls(&f, calls)
	for _, c := range calls {
		child, ok := l.resolve(&f, c)
		if !ok {
			continue
		}
		for p := &f; p != nil; p = p.parent {
			if p.real == child.real {
				l.errorAt(c.rng, "Module call cycle", fmt.Sprintf(
					"%s calls %s (%s), which is already being read as %s.",
					moduleAddr(child.path), c.source, l.displayPath(child.dir), p.addr()))
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		child.parent, child.call = &f, c
		cm := l.module(child.dir, child.real)
		l.checkPassedProviders(c, &f, &child, cm)
		l.walk(child, cm)
	}
}

// addNeeds adds a module's providers and constraints, in file and position
// order, skipping a constraint already added from the same position.
func (l *loader) addNeeds(m *module) {
	needs := make([]need, len(m.needs))
	copy(needs, m.needs)
	sort.SliceStable(needs, func(i, j int) bool {
		a, b := needs[i].constraint, needs[j].constraint
		if a == nil || b == nil {
			return a != nil && b == nil
		}
		if a.rng.Filename != b.rng.Filename {
			return fileOrder(a.rng.Filename, b.rng.Filename)
		}
		return a.rng.Start.Byte < b.rng.Start.Byte
	})
	for _, n := range needs {
		if n.impliedHost {
			l.impliedHost[n.provider] = true
		}
		list, ok := l.providers[n.provider]
		if !ok {
			list = []Constraint{}
		}
		if n.constraint != nil {
			c := Constraint{
				Text: n.constraint.text,
				Pos:  n.constraint.rng.Filename + ":" + strconv.Itoa(n.constraint.rng.Start.Line),
			}
			key := n.provider.String() + "\x00" + c.Text + "\x00" + c.Pos
			if !l.seen[key] {
				l.seen[key] = true
				list = append(list, c)
			}
		}
		l.providers[n.provider] = list
	}
}

// fileOrder orders the files of one module as OpenTofu reads them: primary
// files by name, then override files by name.
func fileOrder(a, b string) bool {
	oa, ob := isOverrideFile(path.Base(a)), isOverrideFile(path.Base(b))
	if oa != ob {
		return ob
	}
	return a < b
}

// resolve finds the directory a module call refers to. It reports a problem
// or a warning and returns false when the module cannot be read.
func (l *loader) resolve(parent *frame, c *callDecl) (frame, bool) {
	childPath := append(append([]string(nil), parent.path...), c.name)
	if l.pkg != "" {
		return l.resolveInPackage(parent, c, childPath)
	}
	key := strings.Join(childPath, ".")
	where := fmt.Sprintf("%s:%d", c.rng.Filename, c.rng.Start.Line)
	rec, installed := l.manifestRecord(key)
	installedDir := ""
	if installed {
		installedDir = rec.Dir
		if !filepath.IsAbs(installedDir) {
			installedDir = filepath.Join(l.root, installedDir)
		}
	}

	switch {
	case !c.sourceSet:
		// Reported when the block was decoded.
		return frame{}, false

	case c.static && isLocalSource(c.source):
		var candidates []string
		if parent.inPackage && installed {
			candidates = append(candidates, installedDir)
		}
		rel := path.Clean(strings.ReplaceAll(c.source, `\`, "/"))
		logical := filepath.Join(parent.logical, filepath.FromSlash(rel))
		local := filepath.Join(parent.dir, filepath.FromSlash(rel))
		if !parent.inPackage && (logical == ".." || strings.HasPrefix(logical, ".."+string(filepath.Separator))) {
			// Above the root, OpenTofu goes up from its real directory
			// (its working directory), not up the path it was named by,
			// which may pass through a symbolic link.
			local = filepath.Join(l.rootReal, logical)
		}
		candidates = append(candidates, local)
		var lastErr error
		for _, dir := range candidates {
			real, err := realDir(dir)
			if err == nil {
				return frame{path: childPath, dir: dir, real: real, logical: logical, inPackage: parent.inPackage}, true
			}
			lastErr = err
		}
		l.errorAt(c.rng, "Unreadable module directory", fmt.Sprintf(
			"The directory %s for %s could not be read: %s.",
			l.displayPath(candidates[len(candidates)-1]), moduleAddr(childPath), errText(lastErr)))
		return frame{}, false

	case installed && staleRecord(rec, c) != "":
		l.warn(fmt.Sprintf("%s (%s) in %s: %s; run \"tofu init\" to include its providers",
			moduleAddr(childPath), describeSource(c), where, staleRecord(rec, c)))
		return frame{}, false

	case installed:
		real, err := realDir(installedDir)
		if err == nil {
			return frame{path: childPath, dir: installedDir, real: real, inPackage: true}, true
		}
		l.warn(fmt.Sprintf("%s (%s) in %s is recorded in .terraform/modules/modules.json, but its directory %s cannot be read; run \"tofu init\" to include its providers",
			moduleAddr(childPath), describeSource(c), where, l.displayPath(installedDir)))
		return frame{}, false

	default:
		l.warn(fmt.Sprintf("%s (%s) in %s is not installed under .terraform/modules; run \"tofu init\" to include its providers",
			moduleAddr(childPath), describeSource(c), where))
		return frame{}, false
	}
}

func describeSource(c *callDecl) string {
	if c.static {
		return c.source
	}
	return "source is not a literal string"
}

// realDir resolves symlinks and checks that the result is a directory.
func realDir(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", errors.New("not a directory")
	}
	return filepath.Abs(real)
}
