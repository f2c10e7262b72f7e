package lockfile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// Lock is one provider's entry in a lock file.
type Lock struct {
	Provider addrs.Provider
	Version  addrs.Version
	// Constraints is the normalized constraint string (NormalizeConstraints),
	// or "" when the configuration declares none.
	Constraints string
	// Hashes are the accepted package hashes in "scheme:value" form, sorted
	// by byte order without duplicates. Parse normalizes them and Bytes
	// writes them normalized whatever their order.
	Hashes []hashing.Hash
	// Listed, for a lock Parse read, are its hashes as the file lists
	// them: in their order, duplicates too (init rewrites such a list).
	Listed []hashing.Hash
}

// File is a whole lock file: one Lock per provider, keyed by the lock's own
// Provider (so Unicode and punycode spellings of a hostname are one key).
// A nil map is an empty file.
type File struct {
	Locks map[addrs.Provider]*Lock
}

// Sorted returns the non-nil locks in the order OpenTofu writes them:
// by hostname (comparison form), then namespace, then type.
func (f *File) Sorted() []*Lock {
	out := make([]*Lock, 0, len(f.Locks))
	for _, l := range f.Locks {
		if l != nil {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b *Lock) int {
		switch {
		case a.Provider.LessThan(b.Provider):
			return -1
		case b.Provider.LessThan(a.Provider):
			return 1
		}
		return 0
	})
	return out
}

// Read parses the lock file at path. A missing file is an empty File and
// no error; callers that care whether it exists should os.Stat it. A lock
// file that is not a regular file (a link to one is) or is larger than
// hclsafe.MaxLockSize is refused with an *hclsafe.Error naming it.
func Read(path string) (*File, error) {
	src, err := hclsafe.ReadFile(path, hclsafe.MaxLockSize)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Locks: map[addrs.Provider]*Lock{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lock file: %w", err)
	}
	return Parse(src, path)
}

// Write atomically replaces the lock file at path with f.Bytes(). An
// existing file keeps its permission bits and a new one is made 0644; a
// symbolic link or other non-regular file at path is an error, left alone.
// It refuses to write a file OpenTofu would reject: a map key that differs
// from its lock's Provider, a zero or unlockable provider, a constraint
// string that is not normalized, or a hash without a scheme.
func Write(path string, f *File) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("write lock file %s: %w", path, err)
	}
	src := f.Bytes()
	if _, err := Parse(src, path); err != nil {
		return fmt.Errorf("write lock file %s: OpenTofu would reject the result:\n%w", path, err)
	}
	return writeFileAtomic(path, src)
}

// check finds what Bytes cannot render at all.
func (f *File) check() error {
	for key, l := range f.Locks {
		if l == nil {
			continue
		}
		if l.Provider.IsZero() {
			return errors.New("a lock has no provider address")
		}
		if key != l.Provider {
			return fmt.Errorf("lock for %s is filed under %s", l.Provider, key)
		}
		if l.Provider.IsBuiltIn() || l.Provider.IsLegacy() {
			return fmt.Errorf("provider %s cannot be locked", l.Provider)
		}
	}
	return nil
}

// Parse reads lock file source with OpenTofu's rules; filename appears in
// error positions. Every problem is reported, as an *Error. Like OpenTofu,
// "module" blocks (reserved for future use) are accepted and ignored.
// Source nested deeper than hclsafe.MaxDepth is refused before HCL reads
// it.
func Parse(src []byte, filename string) (*File, error) {
	if err := hclsafe.CheckDepth(src, filename, hclsafe.Native); err != nil {
		return nil, refused(err)
	}
	parser := hclparse.NewParser()
	file, diags := parser.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, &Error{Diags: diags}
	}
	content, diags := file.Body.Content(&hcl.BodySchema{
		Blocks: []hcl.BlockHeaderSchema{
			{Type: "provider", LabelNames: []string{"source_addr"}},
			{Type: "module", LabelNames: []string{"path"}},
		},
	})
	out := &File{Locks: map[addrs.Provider]*Lock{}}
	seen := map[addrs.Provider]hcl.Range{}
	for _, block := range content.Blocks {
		if block.Type != "provider" {
			continue
		}
		lock, more := decodeLock(block)
		diags = append(diags, more...)
		if lock == nil {
			continue
		}
		if first, dup := seen[lock.Provider]; dup {
			diags = append(diags, problem(block.TypeRange, "Duplicate provider lock",
				fmt.Sprintf("Provider %s is already locked at %s:%d:%d.",
					lock.Provider, first.Filename, first.Start.Line, first.Start.Column)))
			continue
		}
		seen[lock.Provider] = block.DefRange
		out.Locks[lock.Provider] = lock
	}
	if diags.HasErrors() {
		return nil, &Error{Diags: errorsOnly(diags)}
	}
	return out, nil
}

// refused is source that hclsafe turned away, as an *Error at its position.
func refused(err error) *Error {
	e, _ := hclsafe.As(err)
	pos := hcl.Pos{Line: e.Line, Column: e.Column}
	rng := hcl.Range{Filename: e.Filename, Start: pos, End: pos}
	return &Error{Diags: hcl.Diagnostics{problem(rng, e.Summary, e.Detail)}}
}

// errorsOnly drops warnings and orders the errors by position.
func errorsOnly(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b *hcl.Diagnostic) int {
		return cmp.Compare(position(a), position(b))
	})
	return out
}

// position is a sort key for a diagnostic's start; unplaced ones go first.
func position(d *hcl.Diagnostic) int {
	if d.Subject == nil {
		return -1
	}
	return d.Subject.Start.Byte
}

var providerSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "version", Required: true},
		{Name: "constraints"},
		{Name: "hashes"},
	},
}

// decodeLock decodes one provider block. It returns nil when the label is
// unusable, and a lock (possibly incomplete) plus diagnostics otherwise, so
// that a duplicate block's own problems are reported too.
func decodeLock(block *hcl.Block) (*Lock, hcl.Diagnostics) {
	label, labelRange := block.Labels[0], block.LabelRanges[0]
	p, err := addrs.ParseProvider(label)
	if err != nil {
		return nil, hcl.Diagnostics{problem(labelRange, "Invalid provider source address",
			fmt.Sprintf("A provider lock needs a fully qualified hostname/namespace/type address: %v.", err))}
	}
	if want := p.String(); want != label {
		return nil, hcl.Diagnostics{problem(labelRange, "Non-normalized provider source address",
			fmt.Sprintf("Write this provider lock's address in its normalized form, %q.", want))}
	}
	lock := &Lock{Provider: p}
	content, diags := block.Body.Content(providerSchema)
	if attr := content.Attributes["version"]; attr != nil {
		diags = append(diags, decodeVersion(lock, attr)...)
	}
	if attr := content.Attributes["constraints"]; attr != nil {
		diags = append(diags, decodeConstraints(lock, attr)...)
	}
	if attr := content.Attributes["hashes"]; attr != nil {
		diags = append(diags, decodeHashes(lock, attr)...)
	}
	return lock, diags
}

func decodeVersion(lock *Lock, attr *hcl.Attribute) hcl.Diagnostics {
	var raw *string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return diags
	}
	rng := attr.Expr.Range()
	if raw == nil {
		return hcl.Diagnostics{problem(rng, "Missing required argument",
			fmt.Sprintf("The lock for %s needs a \"version\".", lock.Provider))}
	}
	v, err := addrs.ParseVersion(*raw)
	if err != nil {
		return hcl.Diagnostics{problem(rng, "Invalid provider version number",
			fmt.Sprintf("The locked version of %s is not valid: %v.", lock.Provider, err))}
	}
	if canon := v.String(); canon != *raw {
		return hcl.Diagnostics{problem(rng, "Invalid provider version number",
			fmt.Sprintf("The locked version of %s must be written in its normalized form, %q.", lock.Provider, canon))}
	}
	lock.Version = v
	return nil
}

func decodeConstraints(lock *Lock, attr *hcl.Attribute) hcl.Diagnostics {
	var raw string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return diags
	}
	rng := attr.Expr.Range()
	canon, err := addrs.NormalizeConstraints([]string{raw})
	if err != nil {
		return hcl.Diagnostics{problem(rng, "Invalid provider version constraints",
			fmt.Sprintf("The recorded constraints for %s are not valid: %v.", lock.Provider, err))}
	}
	if canon != raw {
		return hcl.Diagnostics{problem(rng, "Invalid provider version constraints",
			fmt.Sprintf("The recorded constraints for %s must be written in their normalized form, %q.", lock.Provider, canon))}
	}
	lock.Constraints = canon
	return nil
}

func decodeHashes(lock *Lock, attr *hcl.Attribute) hcl.Diagnostics {
	elems, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() {
		return diags
	}
	if len(elems) == 0 {
		return hcl.Diagnostics{problem(attr.Expr.Range(), "Invalid provider hash set",
			fmt.Sprintf("The lock for %s must list at least one hash, or leave \"hashes\" out.", lock.Provider))}
	}
	hashes := make([]hashing.Hash, 0, len(elems))
	for _, e := range elems {
		var raw string
		if more := gohcl.DecodeExpression(e, nil, &raw); more.HasErrors() {
			diags = append(diags, more...)
			continue
		}
		if !hasScheme(raw) {
			diags = append(diags, problem(e.Range(), "Invalid provider hash string",
				fmt.Sprintf("%q is not a provider hash: it must start with a scheme such as \"h1:\".", raw)))
			continue
		}
		hashes = append(hashes, hashing.Hash(raw))
	}
	lock.Hashes, lock.Listed = normalizeHashes(hashes), hashes
	return diags
}

// hasScheme reports whether s has OpenTofu's "scheme:value" form: a
// non-empty scheme before the first colon. Unknown schemes are kept.
func hasScheme(s string) bool {
	return strings.IndexByte(s, ':') > 0
}

// normalizeHashes returns a sorted copy of hs without duplicates.
func normalizeHashes(hs []hashing.Hash) []hashing.Hash {
	if len(hs) == 0 {
		return nil
	}
	out := slices.Clone(hs)
	slices.Sort(out)
	return slices.Compact(out)
}
