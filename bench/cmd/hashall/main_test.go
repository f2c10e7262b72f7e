package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// Every decoder gives the same hashes, and the report has the fields
// bench/run reads.
func TestDecodersAgree(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, body := range []string{"provider", strings.Repeat("resource schema ", 10_000), ""} {
		data := zipbuild.Bytes(t, zipbuild.File("docs/", ""), zipbuild.File("docs/readme.md", "# x\n"), zipbuild.File("terraform-provider-x", body))
		path := filepath.Join(dir, "p"+string(rune('a'+i))+".zip")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	var want []string
	for _, decoder := range []string{"std", "fast", "stream"} {
		var stdout, stderr bytes.Buffer
		if err := run(append([]string{"-decoder", decoder, "-v"}, paths...), nil, &stdout, &stderr); err != nil {
			t.Fatalf("-decoder %s: %v", decoder, err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		slices.Sort(lines)
		if want == nil {
			want = lines
		} else if !slices.Equal(lines, want) {
			t.Errorf("-decoder %s gave\n%s\nstd gave\n%s", decoder, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		var report struct {
			Decoder  string   `json:"decoder"`
			Files    int      `json:"files"`
			Bytes    int64    `json:"bytes"`
			CPU      *float64 `json:"cpu_seconds"`
			Streamed *int     `json:"streamed"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatalf("-decoder %s: %v in %q", decoder, err, stdout.String())
		}
		if report.Decoder != decoder || report.Files != len(paths) || report.Bytes == 0 || report.CPU == nil {
			t.Errorf("-decoder %s: report %s", decoder, stdout.String())
		}
		if decoder == "stream" && (report.Streamed == nil || *report.Streamed != len(paths)) {
			t.Errorf("-decoder stream: report %s, want every archive streamed", stdout.String())
		}
	}
	if err := run([]string{"-decoder", "zstd", paths[0]}, nil, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("-decoder zstd accepted")
	}
}
