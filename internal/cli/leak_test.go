package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A token written into a module source's URL never reaches the output:
// a configuration whose git module is not installed is reported by every
// command that reads it, text and --json.
func TestModuleSourceTokenNeverPrinted(t *testing.T) {
	o, dir := fooOrigin(t)
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(app, "main.tf"), []byte(`module "c" {
  source = "git::https://oauth2:ghp_LEAKTOKEN1@git.example.com/net.git?ref=v1.0.0"
}
module "d" {
  source = "https://files.example.com/good.zip?access_token=LEAKTOKEN2"
}
`))
	for _, args := range [][]string{
		{"check", "app"},
		{"check", "app", "--json"},
		{"build", "app", "--dry-run"},
		{"build", "app", "--dry-run", "--json"},
	} {
		code, stdout, stderr := o.run(t, dir, args...)
		out := stdout + stderr
		if strings.Contains(out, "LEAKTOKEN") || !strings.Contains(out, "is not installed") {
			t.Errorf("%v: exit %d, want the module reported without its tokens:\n%s", args, code, out)
		}
		if strings.Contains(out, "LEAKTOKEN") {
			continue
		}
		if slices.Contains(args, "--json") && !strings.Contains(stdout, `{"event":"warning","message":"`) {
			t.Errorf("%v: the configuration's warning is no warning event:\n%s", args, stdout)
		}
		if !strings.Contains(out, "good.zip?access_token=xxxxx)") {
			t.Errorf("%v: the redacted query ate the text after it:\n%s", args, out)
		}
	}
}
