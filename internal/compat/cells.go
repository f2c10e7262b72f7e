package compat

import "fmt"

// Hashes is what a lock file `init` wrote holds for one provider.
type Hashes int

// What a lock file holds for a provider, from least to most.
const (
	// LocalH1 is the installing platform's h1: only.
	LocalH1 Hashes = iota + 1
	// LocalH1ZH is the installing platform's h1: and zh:.
	LocalH1ZH
	// LocalH1AllZH is the installing platform's h1: and a zh: for every
	// line of the release's signed SHA256SUMS.
	LocalH1AllZH
	// AllH1ZH is every platform's h1: and zh: the mirror lists.
	AllH1ZH
	// AllH1AllZH is every platform's h1: and a zh: for every line of the
	// signed SHA256SUMS: what `tfmirror lock` writes.
	AllH1AllZH
)

// Complete reports whether init checks the package on every platform
// against the file; when it is not, init prints "Incomplete lock file
// information for providers".
func (h Hashes) Complete() bool { return h >= LocalH1AllZH }

// Markdown says it for the docs.
func (h Hashes) Markdown() string {
	switch h {
	case LocalH1:
		return "the installing platform's `h1:` only; warning"
	case LocalH1ZH:
		return "the installing platform's `h1:` and `zh:`; warning"
	case LocalH1AllZH:
		return "every platform's `zh:` (signed `SHA256SUMS`), the installing platform's `h1:`; no warning, but each platform's first `init` adds its `h1:`"
	case AllH1ZH:
		return "every platform's `h1:` and `zh:` the mirror lists; no warning"
	case AllH1AllZH:
		return "every platform's `h1:` and `zh:` (signed `SHA256SUMS`); no warning"
	}
	return fmt.Sprintf("Hashes(%d)", int(h))
}

// Cell is what one column does through one method.
type Cell struct {
	Works bool
	// Installed is what init prints after "- Installed ADDR vX.Y.Z" for
	// each provider (a prefix: key IDs vary), for provider methods.
	Installed string
	// Default and Other are what the lock file init writes holds for
	// providers of the program's default registry host and of any other.
	Default, Other Hashes
	// Note adds to the docs' cell (markdown).
	Note string
	// Error is the client's own error text (whitespace collapsed) when it
	// does not work; Why says it for the docs (markdown).
	Error, Why string
}

// Markdown is the cell in the docs' table.
func (c Cell) Markdown(m Method, p Program) string {
	if !c.Works {
		return fmt.Sprintf("does not work: %s (`%s`)", c.Why, c.Error)
	}
	s := "works"
	switch {
	case m.Modules, m.LockOnly:
	case c.Default == c.Other:
		s += ": " + c.Default.Markdown()
	default:
		s += fmt.Sprintf(": for `%s` providers, %s. For other hosts, %s", p.DefaultHost(), c.Default.Markdown(), c.Other.Markdown())
	}
	if c.Note != "" {
		s += " (" + c.Note + ")"
	}
	return s
}

const (
	verified        = " (verified checksum)"
	unauthenticated = " (unauthenticated)"
)

// tofuRewritesHashicorp is why OpenTofu fails: its own lock file fails
// the same way.
const tofuRewritesHashicorp = "OpenTofu adds a `registry.opentofu.org` entry for every `registry.terraform.io/hashicorp/*` entry of a lock file (`UpgradeFromPredecessorProject`), whoever wrote the file, its own included; require these providers from `registry.opentofu.org` instead"

// cells are the expectations, by method ID and column ID.
var cells = map[string]map[string]Cell{
	"network_mirror": {
		"tofu-1.12": {Works: true, Installed: verified, Default: LocalH1ZH, Other: LocalH1ZH},
		"tofu-1.10": {Works: true, Installed: verified, Default: LocalH1ZH, Other: LocalH1ZH},
		"terraform": {Works: true, Installed: verified, Default: LocalH1, Other: LocalH1},
	},
	"trust_all_hashes": {
		"tofu-1.12": {Works: true, Installed: ". Signature validation was skipped due to the registry not containing GPG keys for this provider", Default: AllH1ZH, Other: LocalH1ZH},
		"tofu-1.10": {Works: true, Installed: verified, Default: LocalH1ZH, Other: LocalH1ZH, Note: "the setting is ignored without an error: as `network_mirror`"},
		"terraform": {Works: true, Installed: verified, Default: LocalH1, Other: LocalH1, Note: "the setting is ignored without an error: as `network_mirror`"},
	},
	"filesystem_packed": {
		"tofu-1.12": {Works: true, Installed: unauthenticated, Default: LocalH1, Other: LocalH1},
		"tofu-1.10": {Works: true, Installed: unauthenticated, Default: LocalH1, Other: LocalH1},
		"terraform": {Works: true, Installed: unauthenticated, Default: LocalH1, Other: LocalH1},
	},
	"filesystem_unpacked": {
		"tofu-1.12": {Works: true, Installed: unauthenticated, Default: LocalH1, Other: LocalH1},
		"tofu-1.10": {Works: true, Installed: unauthenticated, Default: LocalH1, Other: LocalH1},
		"terraform": {Works: true, Installed: unauthenticated, Default: LocalH1, Other: LocalH1},
	},
	"registry_replica": {
		"tofu-1.12": {Works: true, Installed: " (signed, key ID ", Default: AllH1AllZH, Other: LocalH1AllZH, Note: "the `h1:` of every platform comes from the replica's `packages` field"},
		"tofu-1.10": {Works: true, Installed: " (signed, key ID ", Default: LocalH1AllZH, Other: LocalH1AllZH},
		"terraform": {Works: true, Installed: " (self-signed, key ID ", Default: LocalH1AllZH, Other: LocalH1AllZH},
	},
	"oci_mirror": {
		"tofu-1.12": {Works: true, Installed: verified, Default: LocalH1ZH, Other: LocalH1ZH},
		"tofu-1.10": {Works: true, Installed: verified, Default: LocalH1ZH, Other: LocalH1ZH},
		"terraform": {Error: `Unknown provider installation method "oci_mirror"`, Why: "Terraform has no `oci_mirror`"},
	},
	"hashicorp_terraform_lock": {
		"tofu-1.12": {Error: "Provider dependency changes detected", Why: tofuRewritesHashicorp},
		"tofu-1.10": {Error: "Provider dependency changes detected", Why: tofuRewritesHashicorp},
		"terraform": {Works: true, Installed: verified, Default: AllH1AllZH, Other: AllH1AllZH, Note: "`init` leaves the file byte for byte"},
	},
	"modules_nginx": {
		"tofu-1.12": {Works: true},
		"tofu-1.10": {Works: true},
		"terraform": {Works: true, Note: "the location comes from the `X-Terraform-Get` header the shipped configuration adds"},
	},
	"modules_static": {
		"tofu-1.12": {Works: true, Note: "the location comes from the JSON answer"},
		"tofu-1.10": {Works: true, Note: "the location comes from the JSON answer"},
		"terraform": {Error: "failed to get download URL for", Why: "Terraform reads a module's location only from the `X-Terraform-Get` header, which a plain file server does not send"},
	},
	"oci_modules": {
		"tofu-1.12": {Works: true},
		"tofu-1.10": {Works: true},
		"terraform": {Error: "download not supported for scheme 'oci'", Why: "Terraform has no `oci://` module sources"},
	},
}

// CellOf returns the expectation for a column through a method.
func CellOf(method, column string) (Cell, error) {
	c, ok := cells[method][column]
	if !ok {
		return Cell{}, fmt.Errorf("the compatibility matrix has no cell for %s through %s", column, method)
	}
	return c, nil
}
