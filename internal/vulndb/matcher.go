package vulndb

import (
	"context"

	"github.com/tfmirror/tfmirror/internal/httpx"
)

// Matcher is a database, loaded (Offline) or served (Remote), that
// matches programs.
type Matcher interface {
	Match(ctx context.Context, p Program) ([]Finding, error)
	// Location names the database in messages; it never holds a secret.
	Location() string
	// Identity names the database's contents.
	Identity() Identity
}

// Offline is a loaded database as a Matcher.
type Offline struct {
	DB    *DB
	Where string
}

// Match is DB.Match.
func (o Offline) Match(_ context.Context, p Program) ([]Finding, error) { return o.DB.Match(p), nil }

// Location is where the database was read from.
func (o Offline) Location() string { return o.Where }

// Identity is DB.Identity.
func (o Offline) Identity() Identity { return o.DB.Identity() }

// Identity names the served database by its index: the newest modified
// time of the advisories it lists, how many it lists, and the index's
// SHA-256.
func (r *Remote) Identity() Identity { return r.identity }

// Location is the served database's URL, without credentials.
func (r *Remote) Location() string { return httpx.Redact(r.base) }
