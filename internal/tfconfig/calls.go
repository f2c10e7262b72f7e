package tfconfig

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	tfaddr "github.com/opentofu/registry-address/v2"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// ModuleCalls reads the module at subdir (slash-separated, "" for the
// root) of a fetched module package, and the modules it calls by local
// path inside the package, and returns the module registry packages they
// call with the version constraints written for them (as Root.Modules).
// Constraint positions are relative to packageRoot. Provider requirements
// are not collected, .terraform/modules is never read, and calls of other
// remote sources are not followed.
//
// The package is outside input: each configuration file read is refused
// before it is parsed when it holds more than hclsafe.MaxModuleFileSize,
// and so is one that takes the files read together past
// hclsafe.MaxModuleConfigSize; the problem names the file.
//
// A local call whose directory (symlinks resolved) leaves packageRoot, as
// a subdir that does, is a problem, as in OpenTofu; so is a configuration
// file that is a link out of the package. A source or version that is not
// a literal is evaluated with the package's variables' defaults and its
// locals; one that needs a value the package has no default for gives no
// constraint and is not followed. Problems come back as an *Error; the
// calls not followed that init would still make (another remote source, a
// source that needs the caller's values) come back as warnings, for the
// build to say that init will not find those in the mirror.
func ModuleCalls(packageRoot, subdir string) (map[addrs.Module][]Constraint, []string, error) {
	l, f, err := packageLoader(packageRoot, subdir)
	if err != nil {
		return nil, nil, err
	}
	l.walk(f, l.module(f.dir, f.real))
	if len(l.problems) > 0 {
		return nil, nil, &Error{Problems: l.problems}
	}
	return l.registryCalls(), l.warnings, nil
}

// packageLoader returns a loader for ModuleCalls and the frame of the
// module to read, or an *Error when subdir is not a readable directory
// inside the package.
func packageLoader(packageRoot, subdir string) (*loader, frame, error) {
	fail := func(summary, detail string) (*loader, frame, error) {
		return nil, frame{}, &Error{Problems: []Problem{{File: filepath.ToSlash(subdir), Summary: summary, Detail: detail}}}
	}
	abs, err := filepath.Abs(packageRoot)
	if err != nil {
		return fail("Failed to read module package", err.Error())
	}
	pkg, err := realDir(abs)
	if err != nil {
		return fail("Failed to read module package", fmt.Sprintf("The package directory %s cannot be read: %s.", packageRoot, errText(err)))
	}
	if subdir != "" && !filepath.IsLocal(filepath.FromSlash(subdir)) {
		return fail("Module directory outside its package", fmt.Sprintf("The subdirectory %q is not inside the module package.", subdir))
	}
	dir := filepath.Join(abs, filepath.FromSlash(subdir))
	l := newLoader(dir, abs)
	l.pkg, l.budget = pkg, moduleBudget()
	real, err := realDir(dir)
	switch {
	case err != nil:
		return fail("Failed to read module directory", fmt.Sprintf("Module directory %s does not exist or cannot be read: %s.", l.displayPath(dir), errText(err)))
	case !within(pkg, real):
		return fail("Module directory outside its package", fmt.Sprintf("The subdirectory %q leads out of the module package through a symbolic link.", subdir))
	}
	return l, frame{dir: dir, real: real, inPackage: true}, nil
}

// registrySource tells, by OpenTofu's rule, whether a module source
// address names a module registry package: it is not a local path ("./",
// "../" and their backslash forms) and it parses as a registry address.
// Anything else (git::, github.com/..., https URLs, s3::, oci://, absolute
// paths) is a remote source for go-getter. err is set for a registry
// address tfmirror cannot mirror (a host with a port). The subdirectory
// is dropped: the package is what is mirrored.
func registrySource(src string) (m addrs.Module, ok bool, err error) {
	if isLocalSource(src) {
		return addrs.Module{}, false, nil
	}
	if _, err := tfaddr.ParseModuleSource(src); err != nil {
		return addrs.Module{}, false, nil
	}
	m, _, err = addrs.ParseModuleSource(src)
	return m, true, err
}

// addRegistryCalls records the module registry packages a module instance
// calls, and the version constraints written for them, in file and
// position order, skipping a constraint already added from the same
// position.
func (l *loader) addRegistryCalls(f *frame, mcalls []*callDecl) {
	calls := append([]*callDecl(nil), mcalls...)
	sort.SliceStable(calls, func(i, j int) bool {
		a, b := calls[i].rng, calls[j].rng
		if a.Filename != b.Filename {
			return fileOrder(a.Filename, b.Filename)
		}
		return a.Start.Byte < b.Start.Byte
	})
	for _, c := range calls {
		callPath := append(append([]string(nil), f.path...), c.name)
		at := fmt.Sprintf("%s in %s:%d", moduleAddr(callPath), c.rng.Filename, c.rng.Start.Line)
		if c.sourceSet && !c.static && l.pkg != "" {
			l.warn(at + ": its source needs a value the package has no default for (the caller's, which tfmirror does not read), so the module it calls is not mirrored and init, installing from the mirror, cannot fetch it")
		}
		if !c.sourceSet || !c.static {
			continue
		}
		pkg, ok, err := registrySource(c.source)
		if !ok {
			if l.pkg != "" && !isLocalSource(c.source) {
				l.warn(fmt.Sprintf("%s calls %s, which is not a module registry package: tfmirror mirrors the registry modules a module calls, so init fetches this one from there", at, excerpt.Quote(c.source)))
			}
			continue
		}
		if err != nil {
			l.errorAt(c.rng, "Unsupported module registry address", fmt.Sprintf("%s calls %s, which tfmirror cannot mirror: %s.", moduleAddr(callPath), c.source, err))
			continue
		}
		l.addRegistryCall(pkg, c, callPath)
	}
}

// addRegistryCall records one call of pkg: its constraint, or, without
// one, an empty Text at the module block (any version).
func (l *loader) addRegistryCall(pkg addrs.Module, c *callDecl, callPath []string) {
	if c.versionDynamic {
		l.warn(fmt.Sprintf("%s (%s) in %s:%d has a version that is not a literal string; no version constraint is taken from it",
			moduleAddr(callPath), c.source, c.rng.Filename, c.rng.Start.Line))
	}
	con := Constraint{Pos: c.rng.Filename + ":" + strconv.Itoa(c.rng.Start.Line)}
	if c.version != nil {
		con = Constraint{Text: c.version.text, Pos: c.version.rng.Filename + ":" + strconv.Itoa(c.version.rng.Start.Line)}
		if mc, err := addrs.ParseModuleConstraint(con.Text); err == nil && mc.AllowsNone() {
			l.errorAt(c.version.rng, "Version constraint allows no version",
				fmt.Sprintf("%s (%s) asks for version %q, which no version can satisfy: \"tofu init\" would find none either.", moduleAddr(callPath), c.source, con.Text))
		}
	}
	key := "module " + pkg.String() + "\x00" + con.Text + "\x00" + con.Pos
	if !l.seen[key] {
		l.seen[key] = true
		l.registry[pkg] = append(l.registry[pkg], con)
	}
}

// registryCalls returns the module registry calls recorded: a package
// called only without a version gets an empty list, one also called with
// a version keeps the empty Texts of its other calls.
func (l *loader) registryCalls() map[addrs.Module][]Constraint {
	for pkg, list := range l.registry {
		if !slices.ContainsFunc(list, func(c Constraint) bool { return c.Text != "" }) {
			l.registry[pkg] = []Constraint{}
		}
	}
	return l.registry
}

// resolveInPackage finds the directory of a local call inside the package
// ModuleCalls reads; other calls are not followed. A directory outside
// the package is a problem.
func (l *loader) resolveInPackage(parent *frame, c *callDecl, childPath []string) (frame, bool) {
	if !c.sourceSet || !c.static || !isLocalSource(c.source) {
		return frame{}, false
	}
	rel := path.Clean(strings.ReplaceAll(c.source, `\`, "/"))
	dir := filepath.Join(parent.dir, filepath.FromSlash(rel))
	real, err := realDir(dir)
	switch {
	case !within(l.base, dir) || (err == nil && !within(l.pkg, real)):
		l.errorAt(c.rng, "Local module path escapes module package", fmt.Sprintf(
			"The source %q of %s leads to %s, outside the module package. A local source must stay within the package of the module that calls it.",
			c.source, moduleAddr(childPath), l.displayPath(dir)))
		return frame{}, false
	case err != nil:
		l.errorAt(c.rng, "Unreadable module directory", fmt.Sprintf(
			"The directory %s for %s could not be read: %s.", l.displayPath(dir), moduleAddr(childPath), errText(err)))
		return frame{}, false
	}
	return frame{path: childPath, dir: dir, real: real, inPackage: true}, true
}

// fileOutsidePackage reports a configuration file that leads out of the
// package ModuleCalls reads; nil when it does not, or outside ModuleCalls.
func (l *loader) fileOutsidePackage(file string) *hcl.Diagnostic {
	if l.pkg == "" {
		return nil
	}
	real, err := filepath.EvalSymlinks(file)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil || within(l.pkg, real) {
		return nil // reading it reports a file that cannot be read
	}
	display := l.displayPath(file)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Configuration file outside its package",
		Detail:   fmt.Sprintf("The configuration file %s is a link that leads out of the module package.", display),
		Subject:  &hcl.Range{Filename: display},
	}
}

// within reports whether p is root or lies below it (both absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(rel)
}
