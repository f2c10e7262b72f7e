// Package examples holds sample manifests, configurations and client
// configurations; its tests keep them valid.
package examples

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
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

// TestInstallScript runs the CI examples' install step against a release
// served in the test: the pinned archive installs when its SHA-256 is the
// pinned one, and nothing is installed when it is not.
func TestInstallScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	arch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[runtime.GOARCH]
	if runtime.GOOS != "linux" || arch == "" {
		t.Skip("the fake release is for linux")
	}
	archive := tarGz(t, "tfmirror", "#!/bin/sh\necho 'tfmirror 1.4.0 (commit test)'\n")
	name := "/v1.4.0/tfmirror_1.4.0_linux_" + arch + ".tar.gz"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != name {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(archive)
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	for _, tc := range []struct {
		name, sha string
		ok        bool
	}{{"pinned", hex.EncodeToString(sum[:]), true}, {"tampered", strings.Repeat("0", 64), false}} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			cmd := exec.Command("sh", filepath.Join("ci", "install-tfmirror.sh"))
			cmd.Env = append(os.Environ(), "CURL_CA_BUNDLE="+caFile, "TFMIRROR_RELEASES="+srv.URL, "TFMIRROR_BIN="+bin,
				"TFMIRROR_VERSION=1.4.0", "TFMIRROR_SHA256="+tc.sha)
			out, err := cmd.CombinedOutput()
			_, statErr := os.Stat(filepath.Join(bin, "tfmirror"))
			if tc.ok && (err != nil || statErr != nil || !strings.Contains(string(out), "tfmirror 1.4.0")) {
				t.Errorf("install: %v, %v\n%s", err, statErr, out)
			}
			if !tc.ok && (err == nil || statErr == nil) {
				t.Errorf("an archive with another SHA-256 was installed: %v\n%s", err, out)
			}
		})
	}
}

func tarGz(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExamplesArePinned: the examples install a pinned release through the
// tested install step (never "latest", never go install of a module path
// that cannot be fetched), every Go image is at least as new as go.mod, and
// the Kubernetes example says which Kubernetes it needs.
func TestExamplesArePinned(t *testing.T) {
	goMod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(goMod))
	goImage := regexp.MustCompile(`(?m)^FROM golang:(\d+)\.(\d+)`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules"):
			return filepath.SkipDir
		case d.IsDir() || !d.Type().IsRegular():
			return nil
		}
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return rerr
		}
		text := string(data)
		if d.Name() == "Dockerfile" {
			for _, m := range goImage.FindAllStringSubmatch(text, -1) {
				if atoi(t, m[1]) < atoi(t, want[1]) || atoi(t, m[1]) == atoi(t, want[1]) && atoi(t, m[2]) < atoi(t, want[2]) {
					t.Errorf("%s: golang:%s.%s is older than go.mod's go %s.%s", path, m[1], m[2], want[1], want[2])
				}
			}
			if strings.Contains(text, ":latest") || strings.Contains(text, "@latest") {
				t.Errorf("%s: builds from something unpinned (latest)", path)
			}
		}
		if strings.HasPrefix(filepath.ToSlash(path), "../examples/") && (strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
			if strings.Contains(text, "@latest") || strings.Contains(text, "go install github.com/tfmirror") {
				t.Errorf("%s: installs an unpinned tfmirror", path)
			}
			if strings.Contains(text, "tfmirror build") && !strings.Contains(text, "image:") && !strings.Contains(text, "install-tfmirror.sh") {
				t.Errorf("%s: runs tfmirror without installing a pinned release", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	job, err := os.ReadFile(filepath.Join("sharding", "indexed-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(job), "Needs Kubernetes 1.29 or later") {
		t.Error("the Indexed Job example does not say which Kubernetes it needs")
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
