package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/jsonstream"
)

// With --json, stdout carries only JSON lines that end with a summary
// carrying the exit code, on every path: a missing or bad manifest, a
// flag that does not parse, a plan that fails, a build interrupted.
func TestJSONOnEveryPath(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	for name, c := range map[string]struct {
		manifest string
		args     []string
		code     int
		error    string
	}{
		"missing manifest":   {"", []string{"build", "--json", "--config", "missing.hcl"}, ExitUsage, "missing.hcl"},
		"bad manifest":       {`platforms = ["linux_amd64"` + "\n", []string{"build", "--json"}, ExitUsage, "mirror.hcl:"},
		"unknown flag":       {"", []string{"build", "--json", "--no-such-flag"}, ExitUsage, "no-such-flag"},
		"failed plan":        {`platforms = ["linux_amd64"]` + "\nprovider \"hashicorp/nope\" { versions = \"1.0.0\" }\n" + o.hostBlock("registry.opentofu.org"), []string{"build", "--json"}, ExitUsage, "hashicorp/nope"},
		"verify missing":     {"", []string{"verify", "--json", "no-such-dir"}, ExitUsage, "no-such-dir"},
		"near miss":          {"", []string{"prune", "--json", "--out", "s3:/bucket"}, ExitUsage, "did you mean s3://bucket?"},
		"lock check missing": {"", []string{"lock", "--check", "--json", "--mirror", "no-such-dir", "no-such-config"}, ExitUsage, "no-such-config"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if c.manifest != "" {
				writeManifest(t, dir, c.manifest)
			}
			code, stdout, _ := o.run(t, dir, c.args...) // o.run checks the stream against the schema
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			var summary struct {
				ExitCode int    `json:"exit_code"`
				Error    string `json:"error"`
			}
			if err := json.Unmarshal(summaryLine(t, stdout), &summary); err != nil || summary.ExitCode != c.code || !strings.Contains(summary.Error, c.error) {
				t.Errorf("summary %+v (%v), want exit_code %d and an error naming %q", summary, err, c.code, c.error)
			}
			if !strings.Contains(stdout, `{"event":"error"`) {
				t.Errorf("no error event before the summary:\n%s", stdout)
			}
			// Once a command runs, its summary has its own fields,
			// whatever it ended with.
			own := map[string][]string{
				"build":  {"destinations", "packages", "warnings", "errors", "counts"},
				"verify": {"providers", "versions", "archives", "problems", "warnings"},
				"lock":   {"lock_files_checked", "lock_files_flagged", "lock_files_fixed"},
			}[c.args[0]]
			if name != "unknown flag" {
				var fields map[string]json.RawMessage
				_ = json.Unmarshal(summaryLine(t, stdout), &fields)
				for _, f := range own {
					if _, ok := fields[f]; !ok {
						t.Errorf("the %s summary has no %q: %s", c.args[0], f, summaryLine(t, stdout))
					}
				}
			}
			if c.args[0] == "build" && name != "unknown flag" {
				var fields map[string]json.RawMessage
				_ = json.Unmarshal(summaryLine(t, stdout), &fields)
				// A failed build's errors list its error, even one that
				// came before any package did.
				var errs []string
				if err := json.Unmarshal(fields["errors"], &errs); err != nil || len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), c.error) {
					t.Errorf("the failed build's summary lists the errors %q (%v), want its error naming %q", errs, err, c.error)
				}
			}
		})
	}
}

// An interrupted build's --json stream ends with a summary saying so,
// exit code 130, and lists no package as failed.
func TestJSONInterrupted(t *testing.T) {
	o := newOrigin(t)
	for _, typ := range []string{"a", "b", "c", "d"} {
		o.reg.AddWithSize("hashicorp", typ, "1.0.0", 256<<10, "linux_amd64")
	}
	o.reg.SetArchiveDelay(40 * time.Millisecond)
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/a" { versions = "1.0.0" }
provider "hashicorp/b" { versions = "1.0.0" }
provider "hashicorp/c" { versions = "1.0.0" }
provider "hashicorp/d" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	t.Chdir(dir)
	code := Main(ctx, Env{Args: []string{"build", "--json", "--parallel", "1"}, Stdout: &stdout, Stderr: &stderr, Environ: o.environ})
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitInterrupted, stdout.String(), stderr.String())
	}
	jsonstream.Check(t, stdout.String(), ExitInterrupted)
	var summary struct {
		Interrupted bool   `json:"interrupted"`
		Error       string `json:"error"`
		Counts      struct {
			Mirrored, Failed, Canceled int
		} `json:"counts"`
	}
	if err := json.Unmarshal(summaryLine(t, stdout.String()), &summary); err != nil || !summary.Interrupted || summary.Counts.Failed != 0 || summary.Counts.Canceled == 0 {
		t.Errorf("summary %+v (%v): want interrupted, packages canceled and none failed\n%s", summary, err, stdout.String())
	}
	if strings.TrimSpace(stderr.String()) != "tfmirror: "+summary.Error || summary.Error != "interrupted" {
		t.Errorf("stderr is not the one line of the summary's error, \"interrupted\":\n%s\nsummary error: %q", stderr.String(), summary.Error)
	}
	// The error event says the same, not the cancellation of every step.
	if !strings.Contains(stdout.String(), `{"event":"error","message":"interrupted",`) {
		t.Errorf("the error event does not say \"interrupted\":\n%s", stdout.String())
	}
}

// Every command's start event comes when it starts, and elapsed_seconds
// counts from there: verify, audit and bundle made their printer only to
// print their report, so they said 0 for runs of seconds.
func TestJSONStartsWhenTheCommandStarts(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	url := serveSiteSeeing(t, &o, site, "application/json", func(*http.Request) { time.Sleep(50 * time.Millisecond) })
	for _, args := range [][]string{
		{"verify", "--json", url},
		{"audit", "--json", url, "--vulndb", tinyOSV(t)},
	} {
		code, stdout, stderr := o.run(t, t.TempDir(), args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		var start, summary struct {
			Time    time.Time `json:"time"`
			Elapsed float64   `json:"elapsed_seconds"`
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if err := json.Unmarshal([]byte(lines[0]), &start); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(summaryLine(t, stdout), &summary); err != nil {
			t.Fatal(err)
		}
		if took := summary.Time.Sub(start.Time); took < 200*time.Millisecond || summary.Elapsed < 0.2 {
			t.Errorf("%v: start at %s, summary %s later, elapsed_seconds %v; the run made several requests of 50 ms", args, start.Time, took, summary.Elapsed)
		}
	}
}

// With --json, help, the version and completion scripts go to stderr:
// stdout carries JSON lines only, ending with the summary.
func TestJSONKeepsTextOffStdout(t *testing.T) {
	o := newOrigin(t)
	for _, args := range [][]string{
		{"--json", "help", "bundle", "import"},
		{"--json", "bundle", "import", "--help"},
		{"--json", "--version"},
		{"--json", "completion", "bash"},
	} {
		code, stdout, stderr := o.run(t, t.TempDir(), args...) // o.run checks the stream against the schema
		if code != ExitOK || strings.TrimSpace(stderr) == "" {
			t.Errorf("%v: exit %d, want 0 and the text on stderr\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if !strings.HasPrefix(line, `{"event":`) {
				t.Errorf("%v: a line of stdout that is not an event: %q", args, line)
				break
			}
		}
		summaryLine(t, stdout)
	}
}

// A command that takes one argument says which, when it gets none or two.
func TestOneArgumentNamed(t *testing.T) {
	o := newOrigin(t)
	for _, args := range [][]string{{"verify"}, {"bundle", "create"}, {"serve", "a", "b"}} {
		code, _, stderr := o.run(t, t.TempDir(), args...)
		want := args[len(args)-1] + " takes one argument"
		if len(args) == 3 {
			want = "serve takes one argument, got 2: tfmirror serve SITE"
		}
		if code != ExitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, ": tfmirror "+args[0]) {
			t.Errorf("tfmirror %s: exit %d, want %d saying %q and the usage\n%s", strings.Join(args, " "), code, ExitUsage, want, stderr)
		}
	}
}
