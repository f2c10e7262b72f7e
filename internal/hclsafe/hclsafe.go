// Package hclsafe keeps hostile input away from the HCL parser. HCL parses
// and evaluates by recursion, so deeply nested source ends the whole process
// with "fatal error: stack overflow", which no recover can catch; and a
// "file" that is a pipe or a device never ends.
//
// It owns the limits on the HCL files tfmirror reads (the manifest, OpenTofu
// configuration files, with smaller limits for those of fetched module
// packages, and dependency lock files) and their enforcement before any
// byte reaches HCL: ReadFile reads only regular files, up to a size cap,
// and CheckDepth refuses source nested deeper than MaxDepth.
//
// It does not parse HCL and does not import it: the adapters that do
// (internal/config, internal/tfconfig, internal/lockfile) call it first and
// turn its *Error into their own diagnostics.
package hclsafe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

const (
	// MaxDepth bounds nesting: open brackets, strings, template
	// interpolations and directives, plus the operators and indexes of the
	// expression being read at each level (HCL nests those too). Written and
	// generated configurations stay far below it; parsing and evaluating a
	// level takes HCL about a kilobyte of stack, so 256 levels need well
	// under a megabyte, against the gigabyte at which Go aborts.
	MaxDepth = 256

	// MaxConfigSize caps an OpenTofu configuration file (.tf, .tf.json,
	// .tofu, .tofu.json). Written files are kilobytes, but generated JSON
	// configurations reach megabytes. HCL holds up to about 400 bytes of
	// memory per byte of source (16 MiB of "[1,1,...]" took 6 GB; 16 MiB of
	// ordinary resource blocks 2 GB), as OpenTofu does reading the same
	// file, so the cap also bounds memory.
	MaxConfigSize = 16 << 20

	// MaxModuleFileSize caps one configuration file of a module package
	// tfmirror fetched (read for the modules it calls): outside input, read
	// and parsed while other modules are fetched. The largest files of
	// widely used registry modules are tens of kilobytes (variables.tf of
	// the biggest AWS modules, about 100 KiB), so 1 MiB leaves ten times
	// that, while HCL's memory for the densest 1 MiB stays near 300 MiB
	// (ordinary blocks: about 130 MiB). A 15 MiB file would take gigabytes.
	MaxModuleFileSize = 1 << 20

	// MaxModuleConfigSize caps the configuration files read from one
	// fetched module package together (the module and the modules it
	// calls by local path): real modules hold a few hundred kilobytes of
	// configuration. Files are parsed one at a time, so this bounds the
	// time spent rather than the memory.
	MaxModuleConfigSize = 4 << 20

	// MaxManifestSize caps the manifest, which is written by hand: 4 MiB
	// is tens of thousands of provider blocks, and keeps HCL's memory under
	// about 1.6 GB for the densest input.
	MaxManifestSize = 4 << 20

	// MaxLockSize caps a .terraform.lock.hcl. A provider's entry is about two
	// kilobytes (a hash per platform and per published package), so 4 MiB
	// holds some two thousand providers.
	MaxLockSize = 4 << 20
)

// Error is input refused before parsing.
type Error struct {
	Filename string
	// Line and Column (1-based, in characters) are where the nesting went
	// past the limit; both are zero when the whole file is refused.
	Line, Column int
	Summary      string
	Detail       string
}

// Error renders the refusal as "file:line:column: summary: detail", or
// "file: summary: detail" without a position.
func (e *Error) Error() string {
	at := e.Filename
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d:%d", e.Filename, e.Line, e.Column)
	}
	return fmt.Sprintf("%s: %s: %s", at, e.Summary, e.Detail)
}

// ReadFile reads the file at path, following symbolic links, when it is a
// regular file of at most limit bytes. The null device reads as empty, as
// the usual way to say "no file". Anything else (a directory, a named pipe,
// another device, a socket, a larger file) is an *Error, found without
// blocking and without reading more than limit+1 bytes. Errors from the
// file system are returned as they are, so fs.ErrNotExist can be tested.
func ReadFile(path string, limit int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeCharDevice != 0 { // regular files skip a stat of the null device
		if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(info, null) {
			return []byte{}, nil
		}
	}
	if err := checkInfo(path, info, limit); err != nil {
		return nil, err
	}
	f, err := open(path, limit)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	src, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(src)) > limit {
		return nil, tooLarge(path, limit)
	}
	return src, nil
}

// open opens path for reading and checks again what was opened, in case it
// was swapped since it was looked at. O_NONBLOCK: opening a pipe must not
// wait for a writer.
func open(path string, limit int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil {
		err = checkInfo(path, info, limit)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func checkInfo(path string, info fs.FileInfo, limit int64) error {
	if !info.Mode().IsRegular() {
		return &Error{
			Filename: path,
			Summary:  "Not a regular file",
			Detail:   fmt.Sprintf("It is %s; only regular files, or symbolic links to them, are read.", "a "+atomicfile.TypeName(info.Mode())),
		}
	}
	if info.Size() > limit {
		return tooLarge(path, limit)
	}
	return nil
}

func tooLarge(path string, limit int64) error {
	return &Error{
		Filename: path,
		Summary:  "File too large",
		Detail:   fmt.Sprintf("It is larger than %d MiB, the most tfmirror reads from this kind of file.", limit>>20),
	}
}

// As returns err's *Error, if it holds one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
