//go:build unix

package tfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/hostilefs"
)

// loadWithin runs Load, failing the test if it takes more than a few
// seconds (the pipe fifo, if not "", is then released so the test ends).
func loadWithin(t *testing.T, dir, fifo string) (*Root, error) {
	t.Helper()
	return hostilefs.Within(t, fifo, func() (*Root, error) { return Load(dir) })
}

const awsRequired = "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\" }\n  }\n}\n"

func TestLoadRefusesConfigurationFilesThatAreNotRegular(t *testing.T) {
	for _, kind := range []string{"fifo", "device"} {
		t.Run(kind, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"main.tf": awsRequired})
			bad := filepath.Join(dir, "bad.tf")
			if kind == "fifo" {
				hostilefs.FIFO(t, bad)
			} else {
				hostilefs.DevZero(t, bad)
			}
			_, err := loadWithin(t, dir, bad)
			var lerr *Error
			want := filepath.Base(dir) + "/bad.tf: Not a regular file"
			if !errors.As(err, &lerr) || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want %q", err, want)
			}
		})
	}
}

func TestLoadFollowsLinksToRegularFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{"shared/versions.tf": awsRequired, "root/main.tf": ""})
	if err := os.Symlink("../shared/versions.tf", filepath.Join(dir, "root", "versions.tf")); err != nil {
		t.Fatal(err)
	}
	r, err := loadWithin(t, filepath.Join(dir, "root"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := byAddress(r)["registry.opentofu.org/hashicorp/aws"]; !ok {
		t.Errorf("the linked file was not read: %v", byAddress(r))
	}
}

func TestLoadRefusesDeepNestingAndHugeFiles(t *testing.T) {
	deep := strings.Repeat("[", 100_000)
	for name, files := range map[string]map[string]string{
		"tf":        {"main.tf": awsRequired, "deep.tf": "locals {\n  x = " + deep + "\n}\n"},
		"tofu":      {"deep.tofu": strings.Repeat("locals {\n", 100_000)},
		"json":      {"deep.tf.json": `{"locals": {"x": ` + deep + `}}`},
		"json expr": {"deep.tf.json": `{"locals": {"x": "${` + strings.Repeat("!", 100_000) + `true}"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, files)
			_, err := loadWithin(t, dir, "")
			var lerr *Error
			if !errors.As(err, &lerr) || !strings.Contains(err.Error(), "Nesting too deep") || lerr.Problems[0].Line == 0 ||
				!strings.HasPrefix(lerr.Problems[0].File, filepath.ToSlash(dir)+"/deep.t") {
				t.Errorf("got %v, want a refusal at a position in deep.*", err)
			}
		})
	}
	dir := writeTree(t, map[string]string{"main.tf": awsRequired, "huge.tf": ""})
	hostilefs.Sparse(t, filepath.Join(dir, "huge.tf"), 64<<20)
	_, err := loadWithin(t, dir, "")
	if err == nil || !strings.Contains(err.Error(), "huge.tf: File too large") {
		t.Errorf("got %v, want a size refusal naming huge.tf", err)
	}
}
