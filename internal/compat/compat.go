// Package compat is the compatibility matrix: which client (OpenTofu,
// Terraform, by release) installs through which of tfmirror's outputs, how
// `init` says it checked each package, and what lock file it writes, or
// the error it fails with.
//
// It owns the expectations and nothing else: the end-to-end test
// e2e/TestCompatibilityMatrix proves every cell against the real clients,
// and Markdown renders the same table as docs/compatibility.md (go
// generate ./internal/compat). It runs no client and reads no environment.
package compat

import (
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Program is a client program.
type Program string

// The two client programs.
const (
	OpenTofu  Program = "OpenTofu"
	Terraform Program = "Terraform"
)

// DefaultHost is the registry host the program reads a provider address
// without a host as; init prints addresses of it without the host.
func (p Program) DefaultHost() string {
	if p == Terraform {
		return "registry.terraform.io"
	}
	return "registry.opentofu.org"
}

// Column is a range of releases of one program that behave alike through
// every method: one column of the matrix.
type Column struct {
	ID      string // stable name, used in test names
	Program Program
	From    string   // the first release the column holds for
	Before  string   // the first release it no longer holds for; empty: none
	Tested  []string // the releases the end-to-end matrix runs, named in the docs
}

// Holds reports whether a release of program falls in the column.
func (c Column) Holds(program Program, v addrs.Version) bool {
	if program != c.Program || v.LessThan(mustVersion(c.From)) {
		return false
	}
	return c.Before == "" || v.LessThan(mustVersion(c.Before))
}

// Title is the column's heading in the docs.
func (c Column) Title() string {
	return fmt.Sprintf("%s %s", c.Program, strings.Join(c.Tested, ", "))
}

// Columns are the matrix's columns, in the docs' order.
var Columns = []Column{
	{ID: "tofu-1.12", Program: OpenTofu, From: "1.12.0-a", Tested: []string{"1.12.6"}},
	{ID: "tofu-1.10", Program: OpenTofu, From: "1.10.0-a", Before: "1.12.0-a", Tested: []string{"1.10.10"}},
	{ID: "terraform", Program: Terraform, From: "1.5.0-a", Tested: []string{"1.5.7", "1.8.5"}},
}

// ColumnOf returns the column a release of program (as `version -json`
// reports it) falls in.
func ColumnOf(program Program, version string) (Column, error) {
	v, err := addrs.ParseVersion(version)
	if err != nil {
		return Column{}, fmt.Errorf("reading the release of %s: %w", program, err)
	}
	for _, c := range Columns {
		if c.Holds(program, v) {
			return c, nil
		}
	}
	return Column{}, fmt.Errorf("%s %s is in no column of the compatibility matrix (internal/compat)", program, version)
}

func mustVersion(s string) addrs.Version {
	v, err := addrs.ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Method is a way clients install from tfmirror's output: one row.
type Method struct {
	ID    string // stable name, used in test names
	Title string // the row's heading in the docs (markdown)
	// LockFrom is what `tfmirror lock --mirror` reads for it (markdown);
	// empty for module methods: lock files hold providers only.
	LockFrom string
	Modules  bool // installs modules, not providers
	// LockOnly: the cell is only init -lockfile=readonly with the file
	// `tfmirror lock` wrote, through network_mirror.
	LockOnly bool
}

// Methods are the matrix's rows, in the docs' order.
var Methods = []Method{
	{ID: "network_mirror", Title: "[`network_mirror`](serving.md)", LockFrom: "the mirror's URL"},
	{ID: "trust_all_hashes", Title: "[`network_mirror`](serving.md) with `trust_all_hashes = true`", LockFrom: "the mirror's URL"},
	{ID: "filesystem_packed", Title: "[`filesystem_mirror`](destinations.md#filesystem-mirrors), `--layout packed`", LockFrom: "the directory"},
	{ID: "filesystem_unpacked", Title: "[`filesystem_mirror`](destinations.md#filesystem-mirrors), `--layout unpacked`", LockFrom: "the directory"},
	{ID: "registry_replica", Title: "the [registry replica](airgap.md#registry-replica) through `host` blocks (`--registry-replica`)", LockFrom: "the mirror's URL"},
	{ID: "oci_mirror", Title: "[`oci_mirror`](destinations.md#oci-registries-opentofus-oci_mirror) (`--out oci://`)", LockFrom: "`oci://` and the template"},
	{ID: "hashicorp_terraform_lock", Title: "`tfmirror lock`'s file for a `registry.terraform.io/hashicorp/*` provider, then `init -lockfile=readonly` (through `network_mirror`)", LockFrom: "the mirror's URL", LockOnly: true},
	{ID: "modules_nginx", Title: "modules: the [static module registry](modules.md#clients) through a `host` block, served by [`examples/nginx/tfmirror.conf`](../examples/nginx/tfmirror.conf)", Modules: true},
	{ID: "modules_static", Title: "modules: the [static module registry](modules.md#clients) on a server that only serves files", Modules: true},
	{ID: "oci_modules", Title: "modules: [`oci://` module sources](modules.md#modules-in-an-oci-registry) (`--out oci://`)", Modules: true},
}
