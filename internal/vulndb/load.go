package vulndb

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Bounds on what a database may hold: the Go database has about 5,000
// records of a few KiB each.
const (
	maxRecordBytes = 1 << 20
	maxRecords     = 200_000
	maxTotalBytes  = 1 << 30
)

// LoadFS reads every OSV record (*.json) under fsys: golang.org/x/vulndb's
// data/osv, or the layout vuln.go.dev serves (its index/ is skipped), or
// the contents of an OSV zip. name says where it came from in errors.
func LoadFS(fsys fs.FS, name string) (*DB, error) {
	db, l := newDB(), loader{name: name, digest: sha256.New()}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == "index":
			return fs.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".json"):
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		r, err := l.read(fsys, p)
		if err != nil {
			return err
		}
		db.add(r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the vulnerability database %s: %w", name, err)
	}
	if db.records == 0 {
		return nil, fmt.Errorf("read the vulnerability database %s: it holds no OSV record", name)
	}
	db.digest = hex.EncodeToString(l.digest.Sum(nil))
	return db, nil
}

// Load reads a database from a directory or an OSV zip file.
func Load(where string) (*DB, error) {
	fi, err := os.Stat(where)
	if err != nil {
		return nil, fmt.Errorf("read the vulnerability database: %w", err)
	}
	if fi.IsDir() {
		return LoadFS(os.DirFS(where), where)
	}
	zr, err := zip.OpenReader(where)
	if err != nil {
		return nil, fmt.Errorf("read the vulnerability database %s: not a directory or a zip: %w", where, err)
	}
	defer zr.Close()
	return LoadFS(zr, where)
}

type loader struct {
	name   string
	count  int
	total  int64
	digest hash.Hash // of every record read, with its path, in order
}

func (l *loader) read(fsys fs.FS, p string) (*Record, error) {
	if l.count++; l.count > maxRecords {
		return nil, fmt.Errorf("more than %d records", maxRecords)
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", p, err)
	case len(data) > maxRecordBytes:
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxRecordBytes)
	}
	if l.total += int64(len(data)); l.total > maxTotalBytes {
		return nil, fmt.Errorf("more than %d bytes of records", maxTotalBytes)
	}
	fmt.Fprintf(l.digest, "%s\x00%d\x00", p, len(data))
	l.digest.Write(data)
	return parseRecord(data, p)
}

func parseRecord(data []byte, p string) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	if r.ID == "" {
		return nil, fmt.Errorf("parse %s: %w", p, errNoID)
	}
	return &r, nil
}

var errNoID = errors.New("the record has no id")
