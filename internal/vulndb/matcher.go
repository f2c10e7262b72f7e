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

// Location is the served database's URL, without credentials.
func (r *Remote) Location() string { return httpx.Redact(r.base) }
