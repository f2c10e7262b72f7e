// Package bundle is the bundle command: create packs a built mirror (a
// directory or a bucket) into one verified file, import checks one and
// merges its mirror into a directory or a bucket. The format and its
// checks are package bundle's; this package opens the locations, reads
// the keys and refreshes the destination's views after an import.
package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/views"
	"github.com/tfmirror/tfmirror/layout"
)

// CreateOptions say what to pack.
type CreateOptions struct {
	// Site is the mirror: a directory or s3://BUCKET/PREFIX/.
	Site string
	// Out is the bundle file.
	Out string
	// LockFiles are directories whose .terraform.lock.hcl to include.
	LockFiles []string
	// Flags.SignKey is a file holding the ASCII-armored OpenPGP private
	// key to sign the manifest with; "" signs nothing.
	Flags   settings.Flags
	Process settings.Process
}

// Create packs the mirror.
func Create(ctx context.Context, opts CreateOptions) (*CreateReport, error) {
	if opts.Out == "" {
		return nil, inputerr.Wrap(errors.New("--out is required: the bundle file to write"))
	}
	ref, err := endpoint.Parse(opts.Site)
	if err != nil {
		return nil, err
	}
	if err := ref.Accept("the mirror to bundle", endpoint.Dir, endpoint.S3); err != nil {
		return nil, err
	}
	if ref.Kind == endpoint.Dir {
		if info, err := os.Stat(ref.Path); err != nil || !info.IsDir() {
			return nil, inputerr.Wrap(fmt.Errorf("%s is not a mirror directory (nor an s3://BUCKET/PREFIX/)", ref))
		}
	}
	if err := checkBundleOut(opts.Out, ref); err != nil {
		return nil, err
	}
	_, s, err := config.Resolve(opts.Flags, opts.Process, true)
	if err != nil {
		return nil, err
	}
	lockFiles, err := lockFiles(opts.LockFiles)
	if err != nil {
		return nil, err
	}
	m, err := endpoint.OpenMirror(ctx, ref, s)
	if err != nil {
		return nil, err
	}
	tree, ok := m.(*layout.Tree)
	if !ok {
		return nil, inputerr.Wrap(fmt.Errorf("%s holds no mirror tree to bundle", ref))
	}
	report, err := bundle.Create(ctx, bundle.CreateOptions{
		Mirror: tree, Out: opts.Out, LockFiles: lockFiles, SignKey: s.SignKey, LockTimeout: s.LockTimeout, Trust: s.Trust, ZipLimits: s.ZipLimits,
		ModuleLimits: s.ModuleLimits,
		MaxFileBytes: s.Net.MaxBodyBytes,
	})
	if errors.Is(err, bundle.ErrEmptyMirror) {
		err = inputerr.Wrap(fmt.Errorf("%s: %w", ref, err))
	}
	if err == nil && htmlcatalog.Owned(ctx, tree) == nil {
		// tfmirror's own catalog page is not carried: an import writes
		// the destination's.
		report.Skipped = slices.DeleteFunc(report.Skipped, func(f string) bool { return f == htmlcatalog.Path })
	}
	return report, err
}

// checkBundleOut refuses a bundle file that would land in a directory's
// place or inside the mirror tree it packs, where it would replace one of
// the mirror's files or become part of the next bundle.
func checkBundleOut(out string, site endpoint.Ref) error {
	ref, err := endpoint.Parse(out)
	if err != nil || ref.Kind != endpoint.Dir {
		return nil // bundle.Create names what is wrong with it
	}
	if site.Kind == endpoint.Dir && inside(site.Path, ref.Path) {
		return inputerr.Wrap(fmt.Errorf("--out %s is inside the mirror %s: write the bundle outside the tree it packs", out, site))
	}
	if info, err := os.Stat(ref.Path); err == nil && info.IsDir() {
		return inputerr.Wrap(fmt.Errorf("--out %s is a directory: name the bundle file to write in it, such as %s", out, filepath.Join(out, "mirror.tar.gz")))
	}
	return nil
}

// inside reports whether path is dir or lies below it, links resolved as
// far as they exist.
func inside(dir, path string) bool {
	d, err := resolved(dir)
	if err != nil {
		return false
	}
	p, err := resolved(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && filepath.IsLocal(rel) // "." (dir itself) is local too
}

// resolved is path made absolute with the links of its longest existing
// parent resolved.
func resolved(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest), nil
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// lockFiles names each directory's lock file in the bundle by the
// directory's path relative to the current directory, or its base name
// when it is elsewhere.
func lockFiles(dirs []string) ([]bundle.LockFile, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	var out []bundle.LockFile
	seen := map[string]string{}
	for _, dir := range dirs {
		file := filepath.Join(dir, bundle.LockFileName)
		if info, err := os.Stat(file); err != nil || !info.Mode().IsRegular() {
			return nil, inputerr.Wrap(fmt.Errorf("--lock-files %s: no %s there", dir, bundle.LockFileName))
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("--lock-files %s: %w", dir, err))
		}
		name, err := filepath.Rel(cwd, abs)
		if err != nil || !filepath.IsLocal(name) {
			name = filepath.Base(abs)
		}
		name = filepath.ToSlash(name)
		if name == "." {
			name = ""
		}
		if other, ok := seen[name]; ok {
			return nil, inputerr.Wrap(fmt.Errorf("--lock-files %s and %s would both be bundled as lock-files/%s", other, dir, strings.TrimPrefix(name+"/"+bundle.LockFileName, "/")))
		}
		seen[name] = dir
		out = append(out, bundle.LockFile{Name: name, Path: file})
	}
	return out, nil
}

// ImportOptions say what to import where.
type ImportOptions struct {
	// Bundle is the bundle file.
	Bundle string
	// Out is the destination: a directory or s3://BUCKET/PREFIX/.
	Out string
	// Layout is what a directory holds: network, packed or unpacked.
	Layout string
	// TrustKey is a file of ASCII-armored OpenPGP public keys, one of
	// which must have signed the manifest; "" requires no signature.
	TrustKey string
	// Extras receives the bundle's lock-files/ and cli-config/.
	Extras  string
	Flags   settings.Flags
	Process settings.Process
}

// Import checks the bundle and merges it into the destination, then
// refreshes the destination's views under its lock.
func Import(ctx context.Context, opts ImportOptions) (*ImportReport, error) {
	if opts.Out == "" {
		return nil, inputerr.Wrap(errors.New("--out is required: the mirror directory (or s3://BUCKET/PREFIX/) to import into"))
	}
	kind, err := layout.ParseKind(opts.Layout)
	if err != nil {
		return nil, inputerr.Wrap(fmt.Errorf("--layout: %w", err))
	}
	switch info, err := os.Stat(opts.Bundle); {
	case opts.Bundle == "":
		return nil, inputerr.Wrap(errors.New("the bundle file to import is empty"))
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputerr.Wrap(fmt.Errorf("%s: no such bundle file", opts.Bundle))
	case err != nil:
		return nil, inputerr.Wrap(fmt.Errorf("read the bundle: %w", err))
	case !info.Mode().IsRegular():
		return nil, inputerr.Wrap(fmt.Errorf("%s is a %s, not a bundle file", opts.Bundle, atomicfile.TypeName(info.Mode())))
	}
	if info, err := os.Stat(opts.Extras); opts.Extras != "" && err == nil && !info.IsDir() {
		return nil, inputerr.Wrap(fmt.Errorf("--extras %s is a file, not a directory: name the directory to write the bundle's lock-files/ and cli-config/ into", opts.Extras))
	}
	ref, err := endpoint.Parse(opts.Out)
	if err != nil {
		return nil, err
	}
	if err := ref.Accept("--out", endpoint.Dir, endpoint.S3); err != nil {
		return nil, err
	}
	if opts.Extras != "" && ref.Kind == endpoint.Dir && inside(ref.Path, opts.Extras) {
		// The lock files and snippets would be served as part of the
		// mirror, and a later build or verify would find files of no
		// release there.
		return nil, inputerr.Wrap(fmt.Errorf("--extras %s is inside the mirror %s: write the bundle's lock-files/ and cli-config/ outside the tree clients read", opts.Extras, opts.Out))
	}
	_, s, err := config.Resolve(opts.Flags, opts.Process, true)
	if err != nil {
		return nil, err
	}
	var trusted *signing.TrustedKeys
	if opts.TrustKey != "" {
		data, err := os.ReadFile(opts.TrustKey)
		if err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("--trust-key: %w", err))
		}
		if trusted, err = signing.ReadTrustedKeys(data); err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("--trust-key %s: %w", opts.TrustKey, err))
		}
	}
	started := app.Now(s)
	d, err := endpoint.OpenDestination(ctx, ref, endpoint.DestinationOptions{Layout: kind}, s)
	if err != nil {
		return nil, err
	}
	into := bundle.Target{Tree: d.Tree, Store: d.Store, Layout: kind}
	if ref.Kind == endpoint.Dir {
		if into.Dir, err = filepath.Abs(ref.Path); err != nil {
			return nil, err
		}
	}
	return bundle.Import(ctx, bundle.ImportOptions{
		Bundle: opts.Bundle, Out: opts.Out, Into: into, TrustKeys: trusted, Extras: opts.Extras,
		LockTimeout: s.LockTimeout, Trust: s.Trust, ZipLimits: s.ZipLimits, ModuleLimits: s.ModuleLimits,
		Record: func(ctx context.Context, tree, staged *layout.Tree, report *bundle.ImportReport) error {
			ctx, cancel := app.Finishing(ctx) // what was published is recorded
			defer cancel()
			if _, err := tree.ImportChanges(ctx, staged); err != nil {
				return fmt.Errorf("import the bundle's change records into %s: %w", tree.Location(), err)
			}
			return app.RecordChanges(ctx, []*layout.Tree{tree}, layout.ChangeRecord{Added: report.Added}, started, s, nil)
		},
		Refresh: func(ctx context.Context, tree *layout.Tree) error {
			_, err := views.Refresh(ctx, tree, views.Options{Trust: replica.Trust{Checker: signing.Checker{}, Policy: s.Trust}, Sign: s.SignKey})
			return err
		},
	})
}

// CreateReport and ImportReport are what create and import did.
type (
	CreateReport = bundle.CreateReport
	ImportReport = bundle.ImportReport
)
