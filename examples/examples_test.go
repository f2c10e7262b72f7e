// Package examples holds sample manifests, configurations and client
// configurations; its tests keep them valid.
package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
)

func TestManifestsParse(t *testing.T) {
	for _, name := range []string{"mirror.hcl", "private-registry.hcl"} {
		t.Run(name, func(t *testing.T) {
			m, err := config.Load(filepath.Join(".", name))
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Requirements) == 0 {
				t.Error("no requirements")
			}
		})
	}
}

// TestMonorepoExample checks what examples/monorepo/README.md says.
func TestMonorepoExample(t *testing.T) {
	m, err := config.Load(filepath.Join("monorepo", "mirror.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, dir := range m.Configurations {
		roots = append(roots, filepath.Base(dir))
	}
	if !slices.Equal(roots, []string{"app", "network"}) {
		t.Fatalf("configuration blocks select %q", roots)
	}
	want := map[string]map[string][]string{
		"network": {"registry.opentofu.org/hashicorp/aws": {"~> 5.80"}},
		"app": {
			"registry.opentofu.org/hashicorp/aws": {">= 5.0.0", "< 6.0.0"},
			"registry.opentofu.org/hashicorp/tls": nil,
		},
	}
	for _, dir := range m.Configurations {
		root, err := tfconfig.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for p, cs := range root.Providers {
			var texts []string
			for _, c := range cs {
				texts = append(texts, c.Text)
			}
			got[p.String()] = texts
		}
		w := want[filepath.Base(dir)]
		if len(got) != len(w) {
			t.Errorf("%s: providers %v, want %v", dir, got, w)
		}
		for p, texts := range w {
			if !slices.Equal(got[p], texts) {
				t.Errorf("%s: %s constraints %q, want %q", dir, p, got[p], texts)
			}
		}
	}
}

// TestS3UploadOrder runs examples/s3-upload.sh against a stub "aws" that
// records its calls, and checks the publish order of the four syncs.
func TestS3UploadOrder(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	stub := "#!/bin/sh\necho \"$@\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(bin, "aws"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "s3-upload.sh", "site", "s3://bucket/providers", "--endpoint-url", "https://s3.example")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	wants := []string{"--exclude *.json --include *_provenance.json", "--include *.json --exclude */index.json", "--include */index.json", "--include catalog.json"}
	if len(calls) != len(wants) {
		t.Fatalf("%d syncs, want %d:\n%s", len(calls), len(wants), data)
	}
	for i, want := range wants {
		if !strings.HasPrefix(calls[i], "s3 sync site s3://bucket/providers --no-progress --exclude .tfmirror/*") ||
			!strings.Contains(calls[i], want) || !strings.HasSuffix(calls[i], "--endpoint-url https://s3.example") || strings.Contains(calls[i], "--delete") {
			t.Errorf("sync %d = %q, want one containing %q", i+1, calls[i], want)
		}
	}
}

// TestCIExamplesParse keeps the CI examples valid YAML of the shape their
// CI systems read, and their tfmirror command lines real commands with
// real flags.
func TestCIExamplesParse(t *testing.T) {
	for name, steps := range map[string]func(doc map[string]any) []string{
		"github-actions.yml": func(doc map[string]any) []string {
			var out []string
			for _, job := range doc["jobs"].(map[string]any) {
				for _, step := range job.(map[string]any)["steps"].([]any) {
					if run, ok := step.(map[string]any)["run"].(string); ok {
						out = append(out, run)
					}
				}
			}
			return out
		},
		"gitlab-ci.yml": func(doc map[string]any) []string {
			var out []string
			for _, line := range doc["mirror"].(map[string]any)["script"].([]any) {
				out = append(out, line.(string))
			}
			return out
		},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("ci", name))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			var commands int
			for _, line := range steps(doc) {
				if strings.HasPrefix(line, "tfmirror ") {
					commands++
					checkFlags(t, strings.Fields(line))
				}
			}
			if commands == 0 {
				t.Error("no tfmirror command")
			}
		})
	}
}

// checkFlags runs "tfmirror SUBCOMMAND --help" and checks each --flag of
// the command line is one it lists.
func checkFlags(t *testing.T, args []string) {
	t.Helper()
	out, err := exec.Command("go", "run", "../cmd/tfmirror", args[1], "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("tfmirror %s --help: %v\n%s", args[1], err, out)
	}
	for _, a := range args[2:] {
		if flag, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(string(out), "--"+strings.SplitN(flag, "=", 2)[0]+" ") {
			t.Errorf("tfmirror %s has no flag %s", args[1], a)
		}
	}
}
