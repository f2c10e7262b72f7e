package e2e

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/jsonstream"
	"github.com/tfmirror/tfmirror/internal/testutil/pagetest"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// tfmirrorBin is the tfmirror binary built once by TestMain.
var tfmirrorBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Getenv("TFMIRROR_E2E") != "1" {
		if isCI() {
			fmt.Fprintln(os.Stderr, "e2e: CI=true but TFMIRROR_E2E is not 1: the end-to-end tests must run in CI.\n"+
				"e2e: run ./scripts/test (or .ci/run), which provides tofu and nginx and sets TFMIRROR_E2E=1.")
			return 1
		}
		fmt.Println("e2e: skipped (run ./scripts/test, which provides tofu and nginx)")
		return 0
	}

	dir, err := os.MkdirTemp("", "tfmirror-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	tfmirrorBin = filepath.Join(dir, "tfmirror")
	build := exec.Command("go", "build", "-o", tfmirrorBin, "../cmd/tfmirror")
	build.Stdout = os.Stderr
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building tfmirror: %v\n", err)
		return 1
	}
	return m.Run()
}

func isCI() bool {
	v := os.Getenv("CI")
	return v == "true" || v == "1"
}

// tofuBin returns the OpenTofu 1.12.x binary provided by scripts/test.
func tofuBin(t testing.TB) string {
	t.Helper()
	p := os.Getenv("TFMIRROR_TOFU")
	if p == "" {
		t.Fatal("TFMIRROR_TOFU is not set; run ./scripts/test")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TFMIRROR_TOFU: %v", err)
	}
	return p
}

// oldTofuBin returns the OpenTofu 1.10.x binary provided by scripts/test. It
// skips the test when there is none, except in CI where it must exist.
func oldTofuBin(t testing.TB) string {
	t.Helper()
	p := os.Getenv("TFMIRROR_TOFU_OLD")
	if p == "" {
		if isCI() {
			t.Fatal("TFMIRROR_TOFU_OLD is not set (it is required in CI); run ./scripts/test")
		}
		t.Skip("TFMIRROR_TOFU_OLD is not set (TFMIRROR_SKIP_OLD_TOFU=1?)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TFMIRROR_TOFU_OLD: %v", err)
	}
	return p
}

// terraformBin returns the Terraform binary scripts/test builds
// (TFMIRROR_TERRAFORM). It skips the test when there is none, except in
// CI where it must exist.
func terraformBin(t testing.TB) string {
	t.Helper()
	p := os.Getenv("TFMIRROR_TERRAFORM")
	if p == "" {
		if isCI() {
			t.Fatal("TFMIRROR_TERRAFORM is not set (it is required in CI); run ./scripts/test")
		}
		t.Skip("TFMIRROR_TERRAFORM is not set; scripts/test builds Terraform (scripts/build-terraform)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TFMIRROR_TERRAFORM: %v", err)
	}
	return p
}

// terraformOldBin returns Terraform 1.5.7, the last MPL release, which
// scripts/test builds (TFMIRROR_TERRAFORM_OLD). It skips the test when
// there is none, except in CI where it must exist.
func terraformOldBin(t testing.TB) string {
	t.Helper()
	p := os.Getenv("TFMIRROR_TERRAFORM_OLD")
	if p == "" {
		if isCI() {
			t.Fatal("TFMIRROR_TERRAFORM_OLD is not set (it is required in CI); run ./scripts/test")
		}
		t.Skip("TFMIRROR_TERRAFORM_OLD is not set; scripts/test builds Terraform 1.5.7 (scripts/build-terraform)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("TFMIRROR_TERRAFORM_OLD: %v", err)
	}
	return p
}

func nginxBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TFMIRROR_NGINX"); p != "" {
		return p
	}
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if lp, err := exec.LookPath(p); err == nil {
			return lp
		}
	}
	t.Fatal("nginx not found and TFMIRROR_NGINX is not set; run ./scripts/test")
	return ""
}

// hostPlatform is the platform tofu installs for on this machine.
func hostPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

// caFileEnv writes the CA certificate into a temporary directory and returns
// the environment entry that makes Go programs trust it (and only it, on
// Linux).
func caFileEnv(t testing.TB, ca *testca.CA) []string {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir(), "localhost", "127.0.0.1")
	return []string{"SSL_CERT_FILE=" + caFile}
}

// ---------------------------------------------------------------------------
// nginx

// startNginx serves root over HTTPS with a certificate from ca for localhost
// and 127.0.0.1, and returns the base URL "https://127.0.0.1:PORT/".
//
// When the test runs as root, nginx workers run as nobody; the directories
// above root that this test created are made traversable, but root itself and
// everything inside it are served with the modes they have, so a tree that is
// not world-readable yields 403s just as in a real deployment.
func startNginx(t testing.TB, root string, ca *testca.CA) string {
	t.Helper()
	return startNginxServer(t, root, ca, defaultServerBlock)
}

// serverBlock renders the server {} block nginx serves root with.
type serverBlock func(port int, certFile, keyFile, root string) string

func defaultServerBlock(port int, certFile, keyFile, root string) string {
	return fmt.Sprintf(`server {
		listen 127.0.0.1:%d ssl;
		server_name localhost 127.0.0.1;
		ssl_certificate %s;
		ssl_certificate_key %s;
		root %s;
		autoindex off;
		location / {
			try_files $uri =404;
		}
	}`, port, nginxQuote(certFile), nginxQuote(keyFile), nginxQuote(root))
}

// startNginxServer is startNginx with the given server block.
func startNginxServer(t testing.TB, root string, ca *testca.CA, server serverBlock) string {
	t.Helper()
	nginx := nginxBin(t)

	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	makeTraversable(t, prefix)
	makeTraversable(t, filepath.Dir(root))
	for _, d := range []string{"logs", "tmp"} {
		if err := os.Mkdir(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, certFile, keyFile := ca.WriteFiles(t, prefix, "localhost", "127.0.0.1")

	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		base, err := tryStartNginx(t, nginx, prefix, server(port, certFile, keyFile, root), port, ca)
		if err == nil {
			return base
		}
		lastErr = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	t.Fatalf("starting nginx: %v", lastErr)
	return ""
}

func tryStartNginx(t testing.TB, nginx, prefix, server string, port int, ca *testca.CA) (string, error) {
	t.Helper()
	logs := filepath.Join(prefix, "logs")
	tmp := filepath.Join(prefix, "tmp")
	errorLog := filepath.Join(logs, "error-"+strconv.Itoa(port)+".log")
	conf := filepath.Join(prefix, "nginx-"+strconv.Itoa(port)+".conf")

	config := fmt.Sprintf(`worker_processes 1;
pid %[1]s;
error_log %[2]s info;

events {
	worker_connections 64;
}

http {
	access_log %[3]s;
	client_body_temp_path %[4]s;
	proxy_temp_path %[9]s;
	fastcgi_temp_path %[10]s;
	uwsgi_temp_path %[11]s;
	scgi_temp_path %[12]s;

	types {
		application/json json;
		application/zip zip;
	}
	default_type application/octet-stream;
	sendfile on;
	server_tokens off;

	%[5]s
}
`,
		nginxQuote(filepath.Join(prefix, "nginx-"+strconv.Itoa(port)+".pid")),
		nginxQuote(errorLog),
		nginxQuote(filepath.Join(logs, "access-"+strconv.Itoa(port)+".log")),
		nginxQuote(filepath.Join(tmp, "client_body")),
		server,
		"", "", "",
		nginxQuote(filepath.Join(tmp, "proxy")),
		nginxQuote(filepath.Join(tmp, "fastcgi")),
		nginxQuote(filepath.Join(tmp, "uwsgi")),
		nginxQuote(filepath.Join(tmp, "scgi")),
	)
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(nginx, "-c", conf, "-p", prefix, "-e", errorLog, "-g", "daemon off;")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		select {
		case <-exited:
			return
		default:
		}
		// SIGTERM: fast shutdown of master and workers. Killing only the
		// master with SIGKILL would leave workers holding the port.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	readLog := func() string {
		b, _ := os.ReadFile(errorLog)
		return strings.TrimSpace(out.String() + "\n" + string(b))
	}

	base := fmt.Sprintf("https://127.0.0.1:%d/", port)
	client := ca.Client()
	client.Timeout = 2 * time.Second
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			return "", fmt.Errorf("nginx exited (%w):\n%s", waitErr, readLog())
		default:
		}
		resp, err := client.Get(base)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("nginx did not answer on %s: %w\n%s", base, err, readLog())
		}
		time.Sleep(50 * time.Millisecond)
	}

	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("nginx error log (%s):\n%s", errorLog, readLog())
		}
	})
	return base, nil
}

// nginxQuote quotes a path for an nginx configuration file.
func nginxQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// makeTraversable sets mode 0755 on dir and on every ancestor of it below
// the system temporary directory (t.TempDir creates them 0700), so that
// nginx workers running as nobody can reach files below dir. It fails the
// test if a directory above the temporary directory is not traversable.
func makeTraversable(t testing.TB, dir string) {
	t.Helper()
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmpRoot, err := filepath.Abs(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(tmpRoot, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		t.Fatalf("makeTraversable: %s is not below the temporary directory %s", dir, tmpRoot)
	}
	for d := dir; d != tmpRoot; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for d := tmpRoot; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s (mode %v) is not traversable by other users; nginx workers cannot serve files below it. "+
				"Set TMPDIR to a world-traversable directory such as /tmp.", d, fi.Mode().Perm())
		}
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ---------------------------------------------------------------------------
// Running the programs

// baseEnv is the environment of the test process without anything that
// could make a client use the user's configuration, credentials or caches:
// AWS_* too (AWS_CA_BUNDLE, set on some machines to the system bundle, wins
// over SSL_CERT_FILE for a bucket; AWS_PROFILE and keys would reach a real
// account), and DOCKER_CONFIG and REGISTRY_AUTH_FILE, where registry
// credentials are found.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "TF_LOG" || name == "TF_LOG_PATH" || name == "TF_LOG_CORE" || name == "TF_LOG_PROVIDER":
			// keep: useful when debugging a failing test
		case strings.HasPrefix(name, "TF_"), strings.HasPrefix(name, "OPENTOFU_"),
			strings.HasPrefix(name, "TFMIRROR_"), strings.HasPrefix(name, "AWS_"),
			name == "DOCKER_CONFIG", name == "REGISTRY_AUTH_FILE",
			name == "SSL_CERT_FILE", name == "SSL_CERT_DIR",
			name == "HOME", name == "XDG_CONFIG_HOME", name == "XDG_CACHE_HOME", name == "XDG_DATA_HOME",
			name == "HTTP_PROXY", name == "HTTPS_PROXY", name == "http_proxy", name == "https_proxy",
			name == "NO_PROXY", name == "no_proxy":
			// drop
		default:
			env = append(env, kv)
		}
	}
	return env
}

// mergeEnv returns base with every entry of extra set, later entries
// winning.
func mergeEnv(base []string, extra ...[]string) []string {
	var out []string
	index := map[string]int{}
	set := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			out[i] = kv
			return
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		set(kv)
	}
	for _, e := range extra {
		for _, kv := range e {
			set(kv)
		}
	}
	return out
}

// runTfmirror runs the tfmirror binary in dir with args. env is added to a
// clean environment (HOME and XDG_CACHE_HOME point into a fresh temporary
// directory); callers pass SSL_CERT_FILE (see caFileEnv).
func runTfmirror(t testing.TB, dir string, env []string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	if tfmirrorBin == "" {
		t.Fatal("tfmirror binary not built (TestMain did not run?)")
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tfmirrorBin, args...)
	cmd.Dir = dir
	cmd.Env = mergeEnv(baseEnv(), []string{
		"HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
	}, env)
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout = &outBuf
	cmd.Stderr = &errBuf
	err := cmd.Run()
	stdout, stderr = outBuf.String(), errBuf.String()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		exitCode = 0
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		exitCode = exitErr.ExitCode()
	default:
		t.Fatalf("running tfmirror %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	t.Logf("$ tfmirror %s  (exit %d)\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(args, " "), exitCode, stdout, stderr)
	if slices.Contains(args, "--json") {
		jsonstream.Check(t, stdout, exitCode)
	}
	return stdout, stderr, exitCode
}

// summaryOf is the summary line of a --json run.
func summaryOf(stdout string) []byte {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	return []byte(lines[len(lines)-1])
}

// runTofu runs an OpenTofu (or Terraform) binary in workdir with the given
// CLI configuration and nothing of the user's: TF_CLI_CONFIG_FILE is a
// temporary file holding cliConfigText, HOME a temporary directory,
// TF_PLUGIN_CACHE_DIR unset, CHECKPOINT_DISABLE=1, TF_IN_AUTOMATION=1.
// -no-color is added after the subcommand. env is added last; callers pass
// SSL_CERT_FILE (see caFileEnv). It returns the combined output.
func runTofu(t testing.TB, tofuBin, workdir, cliConfigText string, env []string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cliConfig := filepath.Join(home, "cli.tfrc")
	if err := os.WriteFile(cliConfig, []byte(cliConfigText), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(args) > 0 && !slices.Contains(args, "-no-color") {
		args = append([]string{args[0], "-no-color"}, args[1:]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tofuBin, args...)
	cmd.Dir = workdir
	cmd.Env = mergeEnv(baseEnv(), []string{
		"HOME=" + home,
		"TF_CLI_CONFIG_FILE=" + cliConfig,
		"CHECKPOINT_DISABLE=1",
		"TF_IN_AUTOMATION=1",
	}, env)
	out, err := cmd.CombinedOutput()
	t.Logf("$ %s %s  (err %v)\n%s", filepath.Base(tofuBin), strings.Join(args, " "), err, out)
	return string(out), err
}

// ---------------------------------------------------------------------------
// Inspecting results

// treeHashes returns the SHA-256 (hex) of every regular file below dir
// but the change records (of index.html, without the section that shows
// them), keyed by slash-separated relative path. Other non-directory entries
// (symlinks, ...) are recorded by type so that they count as changes too.
func treeHashes(t testing.TB, dir string) map[string]string {
	t.Helper()
	hashes := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".tfmirror" {
			return filepath.SkipDir // tfmirror's lock and staging area, not part of the mirror
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case !d.Type().IsRegular():
			hashes[rel] = "non-regular:" + d.Type().String()
			return nil
		case isChangeFile(rel):
			return nil
		case rel == "index.html":
			data, err := os.ReadFile(p)
			hashes[rel] = sha256Hex([]byte(pagetest.WithoutChanges(string(data))))
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		hashes[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatalf("treeHashes(%s): %v", dir, err)
	}
	return hashes
}

// isChangeFile reports a file of a tree's change records (rel
// slash-separated): each run that changes a mirror adds its own, with its
// time and command, so two trees of the same packages differ there
// (TestChangeRecordsEndToEnd checks them).
func isChangeFile(rel string) bool {
	return rel == layout.ChangeFeedPath || strings.HasPrefix(rel, layout.ChangesDir+"/")
}

// diffTrees describes how two treeHashes results differ ("" if equal).
func diffTrees(before, after map[string]string) string {
	var lines []string
	for p, h := range before {
		if h2, ok := after[p]; !ok {
			lines = append(lines, "removed: "+p)
		} else if h2 != h {
			lines = append(lines, "changed: "+p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			lines = append(lines, "added:   "+p)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// lockEntry is one provider block of a dependency lock file.
type lockEntry struct {
	Version string
	Hashes  []string
}

var (
	lockProviderRe = regexp.MustCompile(`^provider\s+"([^"]+)"\s*\{\s*$`)
	lockVersionRe  = regexp.MustCompile(`^version\s*=\s*"([^"]*)"\s*$`)
	lockHashesRe   = regexp.MustCompile(`^hashes\s*=\s*\[\s*$`)
	lockStringRe   = regexp.MustCompile(`^"([^"]*)"\s*,?\s*$`)
)

// parseLock parses the subset of HCL that tofu and terraform write to
// .terraform.lock.hcl.
func parseLock(t testing.TB, path string) map[string]lockEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]lockEntry{}
	var (
		current  string
		inBlock  bool
		inHashes bool
		entry    lockEntry
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case !inBlock:
			m := lockProviderRe.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s:%d: unexpected line outside a provider block: %q", path, n, line)
			}
			current, inBlock, entry = m[1], true, lockEntry{}
		case inHashes:
			if line == "]" {
				inHashes = false
				continue
			}
			m := lockStringRe.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s:%d: unexpected line in hashes: %q", path, n, line)
			}
			entry.Hashes = append(entry.Hashes, m[1])
		case line == "}":
			if _, dup := entries[current]; dup {
				t.Fatalf("%s:%d: duplicate provider block %q", path, n, current)
			}
			entries[current] = entry
			inBlock = false
		case lockHashesRe.MatchString(line):
			inHashes = true
		default:
			if m := lockVersionRe.FindStringSubmatch(line); m != nil {
				entry.Version = m[1]
			}
			// constraints and anything else: ignored
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inBlock {
		t.Fatalf("%s: unterminated provider block %q", path, current)
	}
	return entries
}

// parseLockFile returns the hashes of every provider in a lock file, keyed
// by the provider address as written in the block label.
func parseLockFile(t testing.TB, path string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for addr, e := range parseLock(t, path) {
		out[addr] = e.Hashes
	}
	return out
}

// unzipTo extracts the regular files of a zip archive into dir, with the
// permission bits of their entries (0644 where an entry has none).
func unzipTo(t testing.TB, archive []byte, dir string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		name := filepath.FromSlash(f.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("zip entry %q escapes the target directory", f.Name)
		}
		target := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if perm := f.Mode().Perm(); perm != 0 { // the entry's mode, so executables stay executable
			if err := os.Chmod(target, perm); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ---------------------------------------------------------------------------
// A test of the harness itself.

// TestNginxServesStaticTree checks that startNginx serves a world-readable
// tree over HTTPS with the content types clients require, and refuses what
// nginx workers cannot read.
func TestNginxServesStaticTree(t *testing.T) {
	ca := testca.New(t)
	root := filepath.Join(t.TempDir(), "site")
	files := map[string]string{
		"registry.test/acme/foo/index.json":                         `{"versions":{}}`,
		"registry.test/acme/foo/terraform-provider-foo_1.0.0_x.zip": "PK zip bytes",
		"other.bin": "bytes",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Work around any umask: the point is to serve exactly these modes.
	for _, d := range []string{"", "registry.test", "registry.test/acme", "registry.test/acme/foo"} {
		if err := os.Chmod(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	private := filepath.Join(root, "private.json")
	if err := os.WriteFile(private, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}

	base := startNginx(t, root, ca)
	if !strings.HasPrefix(base, "https://127.0.0.1:") || !strings.HasSuffix(base, "/") {
		t.Fatalf("base URL %q", base)
	}
	client := ca.Client()

	get := func(path string) (int, string, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}

	wantType := map[string]string{
		"registry.test/acme/foo/index.json":                         "application/json",
		"registry.test/acme/foo/terraform-provider-foo_1.0.0_x.zip": "application/zip",
		"other.bin": "application/octet-stream",
	}
	for name, content := range files {
		code, ctype, body := get(name)
		if code != http.StatusOK || body != content {
			t.Errorf("GET %s: %d %q, want 200 %q", name, code, body, content)
		}
		if ctype != wantType[name] {
			t.Errorf("GET %s: Content-Type %q, want %q", name, ctype, wantType[name])
		}
	}
	if code, _, _ := get("registry.test/acme/foo/"); code != http.StatusNotFound && code != http.StatusForbidden {
		t.Errorf("GET directory: %d, want 404 or 403 (autoindex off)", code)
	}
	if code, _, _ := get("missing.json"); code != http.StatusNotFound {
		t.Errorf("GET missing.json: %d, want 404", code)
	}
	if os.Geteuid() == 0 {
		// Workers run as nobody: an unreadable file must not be served.
		if code, _, _ := get("private.json"); code != http.StatusForbidden {
			t.Errorf("GET private.json (mode 0600, nginx workers run as nobody): %d, want 403", code)
		}
	}

	// A client that does not trust the test CA must fail the handshake.
	if resp, err := http.Get(base + "other.bin"); err == nil {
		resp.Body.Close()
		t.Errorf("GET with the default client succeeded; want a certificate error")
	}
}
