package vulndb

import (
	"archive/zip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// testdata/osv holds three records of the real Go vulnerability database
// (golang.org/x/vulndb data/osv), as published: a module's (grpc, three
// ranges), the standard library's, and a withdrawn one.
func loadTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Load("testdata/osv")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func ids(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Module+" "+f.ID+" fixed "+f.Fixed)
	}
	return out
}

func TestMatch(t *testing.T) {
	db := loadTestDB(t)
	if db.Len() != 2 {
		t.Fatalf("loaded %d records, want 2 (the withdrawn one left out)", db.Len())
	}
	cases := []struct {
		name string
		mods []Module
		gov  string
		want []string
	}{
		{"grpc before the first fix", []Module{{"google.golang.org/grpc", "v1.56.2"}}, "", []string{"google.golang.org/grpc GO-2023-2153 fixed 1.56.3"}},
		{"grpc fixed", []Module{{"google.golang.org/grpc", "v1.56.3"}}, "", nil},
		{"grpc second range", []Module{{"google.golang.org/grpc", "v1.57.0"}}, "", []string{"google.golang.org/grpc GO-2023-2153 fixed 1.57.1"}},
		{"grpc after the last fix", []Module{{"google.golang.org/grpc", "v1.60.0"}}, "", nil},
		{"pseudo-version below the fix", []Module{{"google.golang.org/grpc", "v1.56.3-0.20230101000000-abcdefabcdef"}}, "", []string{"google.golang.org/grpc GO-2023-2153 fixed 1.56.3"}},
		{"withdrawn advisory", []Module{{"k8s.io/kubernetes", "v1.0.0"}}, "", nil},
		{"not semver", []Module{{"google.golang.org/grpc", "(devel)"}}, "", nil},
		{"stdlib affected", nil, "go1.26.9", []string{"stdlib GO-2026-6809 fixed 1.26.10"}},
		{"stdlib release candidate", nil, "go1.27rc1 X:nocoverageredesign", []string{"stdlib GO-2026-6809 fixed 1.27.3"}},
		{"stdlib fixed", nil, "go1.26.10", nil},
		{"development toolchain", nil, "devel go1.27-abcdef", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(db.Match(tc.mods, tc.gov)); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGoSemver(t *testing.T) {
	for in, want := range map[string]string{
		"go1.22": "v1.22.0", "go1.22.5": "v1.22.5", "go1.23rc1": "v1.23.0-rc.1",
		"go1.21beta2": "v1.21.0-beta.2", "go1.22.5 X:loopvar": "v1.22.5", "devel +abc": "", "": "", "go": "",
	} {
		if got := GoSemver(in); got != want {
			t.Errorf("GoSemver(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoadZipAndRefusals reads an OSV zip as a directory, and refuses a
// database that is empty, malformed or out of bounds.
func TestLoadZipAndRefusals(t *testing.T) {
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "osv.zip")
	writeZip(t, zipPath, map[string]string{"GO-2023-2153.json": readFile(t, "testdata/osv/GO-2023-2153.json")})
	db, err := Load(zipPath)
	if err != nil || db.Len() != 1 {
		t.Fatalf("Load(zip) = %v, %v", db, err)
	}
	bad := map[string]map[string]string{
		"empty":     {"README.md": "no records"},
		"malformed": {"GO-1.json": "{"},
		"no id":     {"GO-1.json": `{"summary":"x"}`},
		"too large": {"GO-1.json": `{"id":"GO-1","summary":"` + string(make([]byte, maxRecordBytes)) + `"}`},
	}
	for name, files := range bad {
		p := filepath.Join(dir, name+".zip")
		writeZip(t, p, files)
		if _, err := Load(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing database loaded")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeZip(t *testing.T, p string, files map[string]string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range files {
		w, _ := zw.Create(name)
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
}
