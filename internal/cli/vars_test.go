package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/app"
	appbuild "github.com/tfmirror/tfmirror/internal/app/build"
	applock "github.com/tfmirror/tfmirror/internal/app/lock"
	appprune "github.com/tfmirror/tfmirror/internal/app/prune"
)

// TestVarFlagsKeepTheirOrder: --var and --var-file reach build and lock
// in one list, in command-line order (a later one wins); so does
// --no-tests.
func TestVarFlagsKeepTheirOrder(t *testing.T) {
	var build appbuild.Options
	var lock applock.Options
	run := commands{
		build: func(_ context.Context, o appbuild.Options) (*appbuild.Report, error) { build = o; return nil, nil },
		lock:  func(_ context.Context, o applock.Options) (*applock.Report, error) { lock = o; return nil, nil },
	}
	want := []app.VarArg{{Value: "a=1"}, {File: true, Value: "x.tfvars"}, {Value: "b=c=d"}}
	args := []string{"--var", "a=1", "--var-file", "x.tfvars", "--var=b=c=d"}
	if code := runWith(t, run, append([]string{"build", "live"}, args...)...); code != ExitOK {
		t.Fatalf("build: exit %d", code)
	}
	if !slices.Equal(build.Vars, want) || build.NoTests {
		t.Errorf("build vars %+v, want %+v", build.Vars, want)
	}
	if code := runWith(t, run, append([]string{"lock", "live", "--mirror", "site", "--no-tests"}, args...)...); code != ExitOK {
		t.Fatalf("lock: exit %d", code)
	}
	if !slices.Equal(lock.Vars, want) || !lock.NoTests {
		t.Errorf("lock vars %+v, want %+v", lock.Vars, want)
	}
	var prune appprune.Options
	run.prune = func(_ context.Context, o appprune.Options) (*appprune.Report, error) { prune = o; return nil, nil }
	if code := runWith(t, run, append([]string{"prune", "live", "--out", "site", "--no-tests"}, args...)...); code != ExitOK {
		t.Fatalf("prune: exit %d", code)
	}
	if !slices.Equal(prune.Vars, want) || !prune.NoTests {
		t.Errorf("prune vars %+v, want %+v", prune.Vars, want)
	}
}

// TestMissingVariableIsUsageError: a module source that needs a variable
// without a value is a user mistake (exit 2) naming the variable, the
// module call and its file:line; --var gives it.
func TestMissingVariableIsUsageError(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tf := "variable \"ns\" {}\nmodule \"net\" {\n  source = \"${var.ns}/net/aws\"\n}\n"
	if err := os.WriteFile(filepath.Join(root, "main.tf"), []byte(tf), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := Main(context.Background(), Env{Args: []string{"lock", root, "--mirror", filepath.Join(dir, "site")}, Stdout: &out, Stderr: &out, Environ: []string{"HOME=" + dir}})
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitUsage, out.String())
	}
	for _, want := range []string{`root/main.tf:1:1: No value for required variable`, `"ns"`, "root/main.tf:2)", "--var ns=VALUE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}
}
