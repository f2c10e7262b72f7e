package tfconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"

	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// The configuration file extensions, longest first so that ".tf.json" is not
// taken for ".tf" by a suffix test that stops early.
var configExts = []string{".tofu.json", ".tf.json", ".tofu", ".tf"}

// configExt returns the configuration extension of a file name, or "" when
// the file is not a configuration file. Test files (.tftest.hcl and the like)
// have none of these extensions.
func configExt(name string) string {
	for _, ext := range configExts {
		if strings.HasSuffix(name, ext) {
			return ext
		}
	}
	return ""
}

// ignoredFile reports whether OpenTofu skips a file as hidden or as an
// editor's backup or lock file: ".name", "name~" and "#name#".
func ignoredFile(name string) bool {
	return strings.HasPrefix(name, ".") ||
		strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"))
}

// isOverrideFile reports whether a configuration file is an override file:
// override.tf, name_override.tf and their .tf.json, .tofu, .tofu.json forms.
func isOverrideFile(name string) bool {
	stem := strings.TrimSuffix(name, configExt(name))
	return stem == "override" || strings.HasSuffix(stem, "_override")
}

// configFiles lists the configuration files of a module directory, split into
// primary and override files, each list in file name order. A .tf or .tf.json
// file is dropped when the same name exists with .tofu or .tofu.json; the two
// lists are filtered separately. For terraform, .tofu and .tofu.json files
// are not configuration files: Terraform reads none.
func configFiles(dir string, terraform bool) (primary, override []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		ext := configExt(name)
		if e.IsDir() || ignoredFile(name) || ext == "" || terraform && (ext == ".tofu" || ext == ".tofu.json") {
			continue
		}
		if isOverrideFile(name) {
			override = append(override, name)
		} else {
			primary = append(primary, name)
		}
	}
	return preferTofu(primary), preferTofu(override), nil
}

// preferTofu removes x.tf when x.tofu is in the list, and x.tf.json when
// x.tofu.json is.
func preferTofu(names []string) []string {
	var kept []string
	for _, name := range names {
		var alt string
		switch ext := configExt(name); ext {
		case ".tf":
			alt = strings.TrimSuffix(name, ext) + ".tofu"
		case ".tf.json":
			alt = strings.TrimSuffix(name, ext) + ".tofu.json"
		}
		if alt != "" && slices.Contains(names, alt) {
			continue
		}
		kept = append(kept, name)
	}
	return kept
}

// readBudget bounds what is read of a fetched module package
// (ModuleCalls): each configuration file, and all of them together.
type readBudget struct {
	file int64 // the most one file may hold
	left int64 // what the files not yet read may hold together
	all  int64 // the most they may hold together, for messages
}

// mib shows a limit in MiB when it is a whole number of them.
func mib(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// moduleBudget is the budget of one ModuleCalls.
func moduleBudget() *readBudget {
	return &readBudget{file: hclsafe.MaxModuleFileSize, left: hclsafe.MaxModuleConfigSize, all: hclsafe.MaxModuleConfigSize}
}

// parseFile reads and parses one configuration file. display is the name
// used in positions. Files ending in ".json" use the JSON syntax. A file
// that is not a regular file (a link to one is), is larger than
// hclsafe.MaxConfigSize (with a budget: than the budget's file limit, or
// than what is left of it) or nests deeper than hclsafe.MaxDepth is
// refused before HCL reads it.
func parseFile(path, display string, budget *readBudget) (hcl.Body, hcl.Diagnostics) {
	return parseFileAs(path, display, budget, func([]byte) bool { return strings.HasSuffix(path, ".json") })
}

// parseFileAs is parseFile with the syntax chosen by isJSON, given the
// file's content.
func parseFileAs(path, display string, budget *readBudget, isJSON func(src []byte) bool) (hcl.Body, hcl.Diagnostics) {
	limit := int64(hclsafe.MaxConfigSize)
	if budget != nil {
		limit = budget.file
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Size() > limit {
			return nil, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "File too large",
				Detail:   fmt.Sprintf("It holds %d bytes, more than %s, the most tfmirror reads from one configuration file of a fetched module.", info.Size(), mib(limit)),
				Subject:  &hcl.Range{Filename: display},
			}}
		}
	}
	src, err := hclsafe.ReadFile(path, limit)
	if err == nil && budget != nil {
		if int64(len(src)) > budget.left {
			return nil, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Module configuration too large",
				Detail: fmt.Sprintf("With this file, the configuration files read from the module package hold more than %s, the most tfmirror reads from a fetched module.",
					mib(budget.all)),
				Subject: &hcl.Range{Filename: display},
			}}
		}
		budget.left -= int64(len(src))
	}
	json := err == nil && isJSON(src)
	if err == nil {
		syntax := hclsafe.Native
		if json {
			syntax = hclsafe.JSON
		}
		err = hclsafe.CheckDepth(src, display, syntax)
	}
	if err != nil {
		return nil, hcl.Diagnostics{readProblem(display, err)}
	}
	var f *hcl.File
	var diags hcl.Diagnostics
	if json {
		f, diags = hcljson.Parse(src, display)
	} else {
		f, diags = hclsyntax.ParseConfig(src, display, hcl.InitialPos)
	}
	if f == nil || f.Body == nil {
		return nil, diags
	}
	return f.Body, diags
}

// readProblem is a configuration file that could not be read, or that
// hclsafe refused, at its position in the file if it has one.
func readProblem(display string, err error) *hcl.Diagnostic {
	e, ok := hclsafe.As(err)
	if !ok {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Failed to read file",
			Detail:   fmt.Sprintf("The configuration file %s could not be read: %s.", display, errText(err)),
			Subject:  &hcl.Range{Filename: display},
		}
	}
	pos := hcl.Pos{Line: e.Line, Column: e.Column}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  e.Summary,
		Detail:   e.Detail,
		Subject:  &hcl.Range{Filename: display, Start: pos, End: pos},
	}
}

// errText is an error's message without the path that os errors repeat.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// displayPath is how a path appears in positions and messages, with
// forward slashes: for a configuration, as reached from the root module
// directory the user named (so "live/app" gives "live/app/main.tf" and
// "live/modules/net/main.tf", paths an editor opens from where the command
// ran, and a root named by its full path below the working directory
// from there); for a module package, relative to the package.
func (l *loader) displayPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	rel, err := filepath.Rel(l.base, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	shown := filepath.Join(l.shown, rel)
	if filepath.IsAbs(shown) && l.cwd != "" {
		// A root named by its full path (a manifest's configuration
		// block): below the working directory, shown from there.
		if r, err := filepath.Rel(l.cwd, shown); err == nil && filepath.IsLocal(r) {
			shown = r
		}
	}
	return filepath.ToSlash(shown)
}
