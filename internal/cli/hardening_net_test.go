package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

// hostileBuild is a directory with a manifest mirroring hashicorp/foo
// (versions, platforms, extra lines) from a fake registry.
func hostileBuild(t *testing.T, o origin, versions, platforms, extra string) string {
	t.Helper()
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = [`+platforms+`]
provider "hashicorp/foo" { versions = "`+versions+`" }
`+extra+"\n"+o.hostBlock("registry.opentofu.org"))
	return dir
}

// runWithin runs tfmirror like origin.run, cancelled after limit, and
// says how long it took.
func (o origin) runWithin(t *testing.T, dir string, limit time.Duration, args ...string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	defer t.Chdir(wd)
	began := time.Now()
	code := Main(ctx, Env{Args: args, Stdout: &stdout, Stderr: &stderr, Environ: o.environ})
	return code, stdout.String() + stderr.String(), time.Since(began)
}

// Presigned download URLs carry their credentials in the query; no error,
// in text or JSON, may show them.
func TestSecretsNeverPrinted(t *testing.T) {
	secrets := []string{"AKIASECRET1", "SIGSECRET2", "TOKSECRET3", "SIGSECRET4", "TOKSECRET5", "TOKSECRET6", "SIGSECRET7"}
	query := "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRET1&x-amz-signature=SIGSECRET2&X-Amz-Security-Token=TOKSECRET3" +
		"&sig=SIGSECRET4&Token=TOKSECRET5&access_token=TOKSECRET6&Signature=SIGSECRET7"
	for _, tt := range []struct {
		name  string
		fails func(*fakeregistry.Registry) string
	}{
		{"archive", func(r *fakeregistry.Registry) string { return fakeregistry.ArchivePath(ns, typ, base, "linux_amd64") }},
		{"SHA256SUMS", func(r *fakeregistry.Registry) string { return fakeregistry.SumsPath(ns, typ, base) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t)
			o.reg.Add(ns, typ, base, "linux_amd64")
			o.reg.PresignDownloads(ns, typ, base, query)
			failing := tt.fails(o.reg)
			o.reg.FailTimes(failing, 403, 100)
			dir := hostileBuild(t, o, base, `"linux_amd64"`, "")
			for _, format := range [][]string{nil, {"--json"}} {
				code, stdout, stderr := o.run(t, dir, append([]string{"build", "--retries", "0"}, format...)...)
				out := stdout + stderr
				if code != ExitFailure {
					t.Fatalf("build %v: exit %d, want %d:\n%s", format, code, ExitFailure, out)
				}
				if !strings.Contains(out, failing+"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=xxxxx") {
					t.Errorf("build %v does not name the redacted URL of %s:\n%s", format, failing, out)
				}
				for _, s := range secrets {
					if strings.Contains(out, s) {
						t.Errorf("build %v printed the secret %s:\n%s", format, s, out)
					}
				}
			}
		})
	}
}

// jsonWarnings returns the messages of the warning events of --json output.
func jsonWarnings(t *testing.T, out string) []string {
	t.Helper()
	var warnings []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Event, Message string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if ev.Event == "warning" {
			warnings = append(warnings, ev.Message)
		}
	}
	return warnings
}

// A registry that sends archives and checksums over plain http to a host
// the manifest allows gets one warning per release; the build still
// verifies and mirrors them.
func TestPlainHTTPDownloadsWarnOncePerRelease(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add(ns, typ, base, "linux_amd64", "darwin_arm64")
	o.reg.Add(ns, typ, next, "linux_amd64", "darwin_arm64")
	o.reg.PlainHTTPDownloads(ns, typ, base)
	allow := "settings {\n  allowed_location_hosts = [\"" + strings.TrimPrefix(o.reg.PlainURL(), "http://") + "\"]\n}"
	dir := hostileBuild(t, o, ">= "+base, `"linux_amd64", "darwin_arm64"`, allow)
	code, stdout, stderr := o.run(t, dir, "build", "--json")
	if code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	var plain []string
	for _, w := range jsonWarnings(t, stdout) {
		if strings.Contains(w, "plain http") {
			plain = append(plain, w)
		}
	}
	want := "registry.opentofu.org/hashicorp/foo " + base + ": the registry serves download_url, shasums_signature_url, shasums_url over plain http (" + o.reg.PlainURL() + ")"
	if len(plain) != 1 || !strings.HasPrefix(plain[0], want) {
		t.Errorf("plain http warnings %q, want one starting %q", plain, want)
	}
	served := false
	for _, r := range o.reg.RequestLog() {
		served = served || (r.Scheme == "http" && r.Path == fakeregistry.ArchivePath(ns, typ, base, "darwin_arm64"))
	}
	if !served {
		t.Errorf("the archive was not fetched over plain http")
	}
}

// An origin that drips one byte at a time keeps every stall timer happy;
// the speed limit fails each attempt after --speed-time, so the build
// ends, after its retries, in seconds. A slow but steady origin above the
// limit still succeeds.
func TestDripFeedingOriginCannotHoldABuild(t *testing.T) {
	archive := fakeregistry.ArchivePath(ns, typ, base, "linux_amd64")
	for _, tt := range []struct {
		name, manifest string
		args           []string
	}{
		{"flags", "", []string{"--speed-limit", "1024", "--speed-time", "1s"}},
		{"manifest", "settings {\n  speed_limit = 1024\n  speed_time = \"1s\"\n}", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t)
			o.reg.Add(ns, typ, base, "linux_amd64")
			o.reg.Drip(archive, 100, 200*time.Millisecond) // 236 bytes in 47s, never 5s without one
			dir := hostileBuild(t, o, base, `"linux_amd64"`, tt.manifest)
			args := append([]string{"build", "--retries", "2", "--stall-timeout", "5s"}, tt.args...)
			code, out, took := o.runWithin(t, dir, 45*time.Second, args...)
			if code != ExitFailure || !strings.Contains(out, "less than the speed limit of 1024 bytes a second") || !strings.Contains(out, "after 3 attempts") {
				t.Fatalf("exit %d after %s, want %d, a speed-limit failure after 3 attempts:\n%s", code, took, ExitFailure, out)
			}
			if took > 20*time.Second {
				t.Errorf("the build took %s", took)
			}
			if n := o.reg.RequestCount(archive); n != 3 {
				t.Errorf("%d archive requests, want 3", n)
			}
		})
	}

	t.Run("slow but steady", func(t *testing.T) {
		o := newOrigin(t)
		o.reg.AddWithSize(ns, typ, base, 96<<10, "linux_amd64")
		o.reg.SetArchiveDelay(300 * time.Millisecond) // 16 KiB chunks: about 53 KiB/s
		dir := hostileBuild(t, o, base, `"linux_amd64"`, "")
		code, out, _ := o.runWithin(t, dir, 45*time.Second, "build", "--speed-limit", "8192", "--speed-time", "1s")
		if code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

// diskWatch records the most bytes the files under dirs held at any
// archive chunk the registry served.
type diskWatch struct {
	dirs []string // directories, or glob patterns of directories

	mu  sync.Mutex
	max int64
}

func (d *diskWatch) sample(int64) {
	var total int64
	for _, pattern := range d.dirs {
		dirs, _ := filepath.Glob(pattern)
		for _, dir := range dirs {
			total += dirBytes(dir)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.max = max(d.max, total)
}

// most is the most bytes seen so far.
func (d *diskWatch) most() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.max
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// An archive body far longer than any provider (64 MiB for a tiny zip)
// is refused at the cap: the build names the package, the downloads in
// the workspace (staging and partial) never hold more than the cap, and
// the transfer stops soon after it.
func TestOversizedArchiveIsCapped(t *testing.T) {
	archive := fakeregistry.ArchivePath(ns, typ, base, "linux_amd64")
	const huge = 64 << 20
	for _, tt := range []struct {
		name, manifest string
		args           []string
		announce       bool // the Content-Length says huge
		packages       bool // the registry announces the real size
		want           string
		limit          int64
	}{
		{"manifest setting, streamed", "settings {\n  max_archive_bytes = 1048576\n}", nil, false, false, "exceeds the limit of 1048576 bytes", 1 << 20},
		{"flag, announced", "", []string{"--max-archive-bytes", "1048576"}, true, false, "the body of 67108864 bytes exceeds the limit of 1048576", 1 << 20},
		{"size the registry announced", "", nil, false, true, "(the registry announced 2418 bytes): read ", 2418},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t)
			o.reg.Add(ns, typ, base, "linux_amd64")
			if n := len(o.reg.Archive(ns, typ, base, "linux_amd64")); tt.packages && n != 2418 {
				t.Fatalf("the archive has %d bytes; update the test", n)
			}
			if tt.packages {
				o.reg.AnnouncePackages()
			}
			o.reg.Oversize(archive, 100, huge, tt.announce)
			dir := hostileBuild(t, o, base, `"linux_amd64"`, tt.manifest)
			work := filepath.Join(dir, "site", ".tfmirror")
			watch := &diskWatch{dirs: []string{filepath.Join(work, "run-*", "staging"), filepath.Join(work, "partial")}}
			o.reg.OnBytes(watch.sample)
			code, out, _ := o.runWithin(t, dir, 45*time.Second, append([]string{"build", "--retries", "2"}, tt.args...)...)
			pkg := "registry.opentofu.org/hashicorp/foo " + base + " linux_amd64"
			if code != ExitFailure || !strings.Contains(out, pkg) || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want %d naming %s and %q:\n%s", code, ExitFailure, pkg, tt.want, out)
			}
			if n := o.reg.RequestCount(archive); n != 1 {
				t.Errorf("%d archive requests: a body over the cap was retried", n)
			}
			watch.sample(0)
			if most := watch.most(); most > tt.limit {
				t.Errorf("the workspace held %d bytes, more than the cap %d", most, tt.limit)
			}
			if served := o.reg.BytesServed(archive); served > huge/4 {
				t.Errorf("the registry could send %d bytes: the build read past the cap", served)
			}
		})
	}
}

// verify over HTTPS reads archives with the same cap.
func TestVerifyURLCapsArchives(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add(ns, typ, base, "linux_amd64")
	dir := hostileBuild(t, o, base, `"linux_amd64"`, "")
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	site := filepath.Join(dir, "site")
	zip := filepath.Join(site, "registry.opentofu.org", ns, typ, "terraform-provider-foo_"+base+"_linux_amd64.zip")
	if err := os.Truncate(zip, 64<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	h := serveStatic(t, site)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := origin{environ: h.environ}.run(t, dir, "verify", h.url, "--max-archive-bytes", "1048576")
	if code != ExitVerification || !strings.Contains(stdout+stderr, "exceeds the limit of 1048576") {
		t.Fatalf("verify: exit %d, want %d and the cap named:\n%s%s", code, ExitVerification, stdout, stderr)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil || len(entries) != 0 {
		t.Errorf("verify left %d temporary files (%v)", len(entries), err)
	}
}

// A download document whose protocol number overflows every integer type
// used to panic in a build goroutine; the build now reports it.
func TestHugeProtocolNumberFailsTheBuild(t *testing.T) {
	o := newOrigin(t)
	o.reg.AddWithOptions(ns, typ, base, fakeregistry.Options{Protocols: []string{"99999999999999999999999"}}, "linux_amd64")
	dir := hostileBuild(t, o, base, `"linux_amd64"`, "")
	code, stdout, stderr := o.run(t, dir, "build")
	if code != ExitFailure || !strings.Contains(stdout+stderr, "speaks plugin protocols 99999999999999999999999") {
		t.Fatalf("exit %d, want %d naming the protocols:\n%s%s", code, ExitFailure, stdout, stderr)
	}
}

// The new network flags are validated like the others, on every command
// that has them.
func TestTransferLimitFlagsAreValidated(t *testing.T) {
	o := newOrigin(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--speed-limit", "-1"}, `invalid argument "-1" for "--speed-limit" flag: invalid size "-1"`},
		{[]string{"verify", "https://mirror.example.com/", "--speed-time", "-1s"}, "speed time must be 0 (no limit) or more, not -1s"},
		{[]string{"lock", "--mirror", "https://mirror.example.com/", "--max-archive-bytes", "-5"}, `invalid argument "-5" for "--max-archive-bytes" flag: invalid size "-5"`},
	} {
		code, _, stderr := o.run(t, dir, tt.args...)
		if code != ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, stderr, ExitUsage, tt.want)
		}
	}
}

// twelvePlatforms are the platforms of a release of 12 archives.
var twelvePlatforms = []string{
	"linux_amd64", "linux_arm64", "linux_386", "linux_arm", "darwin_amd64", "darwin_arm64",
	"windows_amd64", "windows_386", "windows_arm64", "freebsd_amd64", "freebsd_386", "freebsd_arm",
}

// quoted is platforms as an HCL list's items.
func quoted(platforms []string) string {
	return `"` + strings.Join(platforms, `", "`) + `"`
}

// An origin that trickles every archive (20 bytes a second, under a speed
// limit of 1 KiB/s over 1 s) fails a release of 12 archives well within
// the bound below, with the host named: after 3 slow transfers the run
// gives up on the host, and the other archives fail at once instead of
// each spending its 5 attempts. Without that, the same build made all 60
// requests and took about 20 s (two waves of 8 and 4 archives, each 5
// attempts of 1 s plus backoff between them).
func TestTricklingOriginGivenUp(t *testing.T) {
	const bound = 8 * time.Second
	o := newOrigin(t)
	o.reg.Add(ns, typ, base, twelvePlatforms...)
	var archives []string
	for _, p := range twelvePlatforms {
		archive := fakeregistry.ArchivePath(ns, typ, base, p)
		archives = append(archives, archive)
		o.reg.Drip(archive, 100, 50*time.Millisecond)
	}
	dir := hostileBuild(t, o, base, quoted(twelvePlatforms), "")
	code, out, took := o.runWithin(t, dir, 90*time.Second, "build", "--speed-limit", "1024", "--speed-time", "1s", "--stall-timeout", "5s")
	host := strings.TrimPrefix(o.reg.URL, "https://")
	if code != ExitFailure || !strings.Contains(out, "gave up on "+host+" for the rest of this run after ") {
		t.Fatalf("exit %d after %s, want %d and the host %s given up on:\n%s", code, took, ExitFailure, host, out)
	}
	requests := 0
	for _, a := range archives {
		requests += o.reg.RequestCount(a)
	}
	t.Logf("12 trickling archives failed in %s after %d archive requests", took, requests)
	if took > bound {
		t.Errorf("the build took %s, want under %s", took, bound)
	}
	if requests > 8+3 {
		t.Errorf("%d archive requests, want the first wave of 8 and few more (each archive's own 5 attempts would make 60)", requests)
	}
	for _, p := range twelvePlatforms {
		if !strings.Contains(out, fmt.Sprintf("%s/%s %s %s: ", "registry.opentofu.org/hashicorp", typ, base, p)) {
			t.Errorf("no failure reported for %s:\n%s", p, out)
		}
	}
}

// A host that is slow once or twice and then sends at full speed is not
// given up on: two archives of 12 trickle on their first request, their
// retries and every other archive arrive, and the build succeeds.
func TestSlowOnceOriginNotGivenUp(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add(ns, typ, base, twelvePlatforms...)
	for _, p := range twelvePlatforms[:2] {
		o.reg.Drip(fakeregistry.ArchivePath(ns, typ, base, p), 1, 50*time.Millisecond)
	}
	dir := hostileBuild(t, o, base, quoted(twelvePlatforms), "")
	code, out, took := o.runWithin(t, dir, 60*time.Second, "build", "--speed-limit", "1024", "--speed-time", "1s", "--stall-timeout", "5s")
	if code != ExitOK || !strings.Contains(out, "12 mirrored") {
		t.Fatalf("exit %d after %s, want all 12 mirrored:\n%s", code, took, out)
	}
}
