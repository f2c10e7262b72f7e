// Package jsonstream holds tfmirror's --json output to its written
// contract in tests: every line is one object docs/json.schema.json
// describes, the first is a start event and the last a summary with the
// exit code.
package jsonstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	once   sync.Once
	schema *jsonschema.Schema
	err    error
)

// load compiles docs/json.schema.json of this checkout.
func load() (*jsonschema.Schema, error) {
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "json.schema.json")
		f, ferr := os.Open(path)
		if ferr != nil {
			err = ferr
			return
		}
		defer f.Close()
		doc, derr := jsonschema.UnmarshalJSON(f)
		if derr != nil {
			err = derr
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err = c.AddResource("json.schema.json", doc); err == nil {
			schema, err = c.Compile("json.schema.json")
		}
	})
	return schema, err
}

// Check fails t unless stdout is a --json stream as documented, ending in
// a summary whose exit code is code, with at most one error event (none
// when the exit code is 0).
func Check(t testing.TB, stdout string, code int) {
	t.Helper()
	s, err := load()
	if err != nil {
		t.Fatalf("jsonstream: the schema: %v", err)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	for i, line := range lines {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Errorf("--json line %d is not JSON (%v): %s", i+1, err, line)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("--json line %d does not follow docs/json.schema.json: %v\n%s", i+1, err, line)
		}
	}
	var first, last struct {
		Event    string `json:"event"`
		ExitCode *int   `json:"exit_code"`
	}
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if first.Event != "start" {
		t.Errorf("the --json stream starts with %q, not a start event:\n%s", first.Event, stdout)
	}
	if last.Event != "summary" || last.ExitCode == nil || *last.ExitCode != code {
		t.Errorf("the --json stream does not end with a summary with exit_code %d:\n%s", code, stdout)
	}
	if n := strings.Count(stdout, `{"event":"error",`); n > 1 || (n == 1 && code == 0) {
		t.Errorf("the --json stream has %d error events, want one before the summary of a failed run, none else:\n%s", n, stdout)
	}
}
