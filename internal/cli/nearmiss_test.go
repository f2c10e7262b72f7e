package cli

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// nearMisses are locations one typo away from a store tfmirror knows (or
// naming one it does not), each with the form the error must suggest: a
// run given one of them must exit 2, write nothing, and say so, naming
// the location and the form it probably meant, whether or not the
// command reads that kind of store ("s3://... is not read here" says as
// much). A scheme tfmirror does not know at all has no intended form; the
// error names it, and the bucket form where the command takes one (a
// Google Cloud Storage bucket is reached through its S3-compatible API).
var nearMisses = []struct {
	loc     string
	suggest string // "" when only the forms the command takes can be suggested
}{
	{"s3:/x", "s3://"},
	{"s3:x", "s3://"},
	{"S3://x", "s3://"},
	{"oci:/x", "oci://"},
	{"oci:x", "oci://"},
	{"OCI://x", "oci://"},
	{"gs://bucket/x", ""},
	{"ftp://x", ""},
	{"oci-layout:/x", "oci-layout://"},
	{"~/x", "$HOME/x"}, // no shell expanded it: --out=~/x, or a manifest
}

// nearMissCommand is a command that takes a location.
type nearMissCommand struct {
	name string
	// args is the command line with loc as the location. outside is a
	// directory outside the working directory for what the command
	// writes besides the location (a --out of --from, a bundle file).
	args func(loc, outside string) []string
	// bucket: the command takes s3://BUCKET/PREFIX/.
	bucket bool
	// mirror: the location must hold a mirror for the command to pass.
	mirror bool
	// accepted checks what a run that passed left.
	accepted func(t *testing.T, wd, loc, outside, stdout string)
}

// TestNearMissLocations runs, through cli.Main, every command that takes
// a location with every near miss: each must be refused as bad input
// (exit 2) with an error naming the location and suggesting the intended
// form, and leave the working directory as it was (no directory named
// like the location). Then the same name written as a path, "./s3:x", is
// a directory like any other, and every command takes it. Each run has a
// fresh working directory.
func TestNearMissLocations(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	manifest := `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
` + o.hostBlock("registry.opentofu.org")
	mainTF := "terraform {\n  required_providers {\n    foo = { source = \"hashicorp/foo\" }\n  }\n}\n"

	built := t.TempDir()
	writeManifest(t, built, manifest)
	mustRun(t, o, built, "build")
	site := filepath.Join(built, "site")
	bundleFile := filepath.Join(t.TempDir(), "mirror-bundle.tar.gz")
	mustRun(t, o, built, "bundle", "create", site, "--out", bundleFile)

	hasTree := func(t *testing.T, dir string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(dir, fooDir, "index.json")); err != nil {
			t.Errorf("no mirror in %s: %v", dir, err)
		}
	}
	commands := []nearMissCommand{
		{
			name: "build --out", bucket: true,
			args:     func(loc, _ string) []string { return []string{"build", "--out", loc} },
			accepted: func(t *testing.T, wd, loc, _, _ string) { hasTree(t, filepath.Join(wd, loc)) },
		},
		{
			name: "build --from", bucket: true, mirror: true,
			args: func(loc, outside string) []string {
				return []string{"build", "--from", loc, "--out", filepath.Join(outside, "site")}
			},
			accepted: func(t *testing.T, _, _, outside, _ string) { hasTree(t, filepath.Join(outside, "site")) },
		},
		{
			name: "lock --mirror", bucket: true, mirror: true,
			args: func(loc, _ string) []string { return []string{"lock", "--mirror", loc, "."} },
			accepted: func(t *testing.T, wd, _, _, _ string) {
				if data, err := os.ReadFile(filepath.Join(wd, ".terraform.lock.hcl")); err != nil || !strings.Contains(string(data), `"registry.opentofu.org/hashicorp/foo"`) {
					t.Errorf("no lock file for hashicorp/foo: %v\n%s", err, data)
				}
			},
		},
		{
			name: "verify", bucket: true, mirror: true,
			args: func(loc, _ string) []string { return []string{"verify", loc} },
			accepted: func(t *testing.T, _, _, _, stdout string) {
				if !strings.Contains(stdout, "1 provider, 1 version, 1 archive checked: 0 problems") {
					t.Errorf("verify did not check the mirror:\n%s", stdout)
				}
			},
		},
		{
			name: "replica", bucket: true, mirror: true,
			args: func(loc, _ string) []string { return []string{"replica", loc} },
			accepted: func(t *testing.T, wd, loc, _, _ string) {
				if _, err := os.Stat(filepath.Join(wd, loc, "replica")); err != nil {
					t.Errorf("no replica: %v", err)
				}
			},
		},
		{
			name: "bundle create", bucket: true, mirror: true,
			args: func(loc, outside string) []string {
				return []string{"bundle", "create", loc, "--out", filepath.Join(outside, "b.tar.gz")}
			},
			accepted: func(t *testing.T, _, _, outside, _ string) {
				if _, err := os.Stat(filepath.Join(outside, "b.tar.gz")); err != nil {
					t.Errorf("no bundle: %v", err)
				}
			},
		},
		{
			name: "bundle import --out", bucket: true,
			args:     func(loc, _ string) []string { return []string{"bundle", "import", bundleFile, "--out", loc} },
			accepted: func(t *testing.T, wd, loc, _, _ string) { hasTree(t, filepath.Join(wd, loc)) },
		},
		{
			name: "prune --out", bucket: true, mirror: true,
			args: func(loc, _ string) []string { return []string{"prune", "--out", loc} },
		},
		{
			name: "serve", mirror: true,
			args: func(loc, _ string) []string { return []string{"serve", loc, "--listen", "127.0.0.1:0"} },
		},
	}

	for _, cmd := range commands {
		t.Run(cmd.name, func(t *testing.T) {
			for _, nm := range nearMisses {
				t.Run(nm.loc, func(t *testing.T) {
					wd, outside := nearMissWorkdir(t, manifest, mainTF)
					before := snapshot(t, wd)
					code, stdout, stderr := runNearMiss(t, o, wd, cmd.args(nm.loc, outside)...)
					if code != ExitUsage {
						t.Errorf("exit %d, want %d (bad input)", code, ExitUsage)
					}
					want := []string{nm.loc}
					if nm.suggest != "" {
						want = append(want, nm.suggest)
					} else if cmd.bucket {
						want = append(want, "s3://")
					}
					for _, w := range want {
						if !strings.Contains(stderr, w) {
							t.Errorf("the error does not say %q:\n%s", w, stderr)
						}
					}
					if changed := changedEntries(before, snapshot(t, wd)); len(changed) > 0 {
						t.Errorf("the run wrote into the working directory: %q", changed)
					}
					if entries, err := os.ReadDir(outside); err != nil || len(entries) > 0 {
						t.Errorf("written outside the working directory: %v %v", entries, err)
					}
					if t.Failed() {
						t.Logf("tfmirror %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.args(nm.loc, outside), " "), code, stdout, stderr)
					}
				})
				dirLoc := "./" + nm.loc
				t.Run(dirLoc, func(t *testing.T) {
					wd, outside := nearMissWorkdir(t, manifest, mainTF)
					if cmd.mirror {
						if err := os.MkdirAll(filepath.Dir(filepath.Join(wd, dirLoc)), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.CopyFS(filepath.Join(wd, dirLoc), os.DirFS(site)); err != nil {
							t.Fatal(err)
						}
					}
					args := cmd.args(dirLoc, outside)
					var code int
					var stdout, stderr string
					if cmd.name == "serve" {
						code, stdout, stderr = serveNearMiss(t, o, wd, args...)
					} else {
						code, stdout, stderr = runNearMiss(t, o, wd, args...)
					}
					if code != ExitOK {
						t.Errorf("tfmirror %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
						return
					}
					if cmd.accepted != nil {
						cmd.accepted(t, wd, dirLoc, outside, stdout)
					}
				})
			}
		})
	}
}

// changedEntries names the entries of a directory (by the first element
// of their path) that were added, removed or changed between two of its
// snapshots.
func changedEntries(before, after map[string]string) []string {
	changed := map[string]bool{}
	top := func(rel string) string {
		first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		return first
	}
	for rel, content := range before {
		if now, ok := after[rel]; !ok || now != content {
			changed[top(rel)] = true
		}
	}
	for rel := range after {
		if _, ok := before[rel]; !ok {
			changed[top(rel)] = true
		}
	}
	return slices.Sorted(maps.Keys(changed))
}

// nearMissWorkdir makes a working directory holding mirror.hcl and
// main.tf, and an empty directory outside it.
func nearMissWorkdir(t *testing.T, manifest, mainTF string) (wd, outside string) {
	t.Helper()
	wd = t.TempDir()
	writeManifest(t, wd, manifest)
	if err := os.WriteFile(filepath.Join(wd, "main.tf"), []byte(mainTF), 0o644); err != nil {
		t.Fatal(err)
	}
	return wd, t.TempDir()
}

// nearMissEnviron is the origin's environment with a home and cache of
// the test's own.
func nearMissEnviron(t *testing.T, o origin) []string {
	home := t.TempDir()
	return append(slices.Clone(o.environ), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
}

// runNearMiss runs tfmirror in-process in wd. A run that does not end in
// a minute (serve, serving a location it should have refused) is
// interrupted.
func runNearMiss(t *testing.T, o origin, wd string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(wd)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if args[0] == "serve" {
		ctx, cancel = context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
	}
	var stdout, stderr syncBuffer
	code := Main(ctx, Env{Args: args, Stdout: &stdout, Stderr: &stderr, Environ: nearMissEnviron(t, o)})
	return code, stdout.String(), stderr.String()
}

// serveNearMiss runs serve in-process in wd until it announces where it
// serves, then interrupts it.
func serveNearMiss(t *testing.T, o origin, wd string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(wd)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, Env{Args: args, Stdout: &stdout, Stderr: &stderr, Environ: nearMissEnviron(t, o)})
	}()
	serving := regexp.MustCompile(`at https://127\.0\.0\.1:\d+/`)
	deadline := time.After(10 * time.Second)
	for !serving.MatchString(stdout.String()) {
		select {
		case code := <-exited:
			return code, stdout.String(), stderr.String()
		case <-deadline:
			cancel()
			<-exited
			t.Fatalf("serve did not announce its URL:\n%s%s", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	return <-exited, stdout.String(), stderr.String()
}
