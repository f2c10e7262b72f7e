package modfetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Bounds on what is kept of git's output.
const (
	maxGitStderr  = 4 << 10
	maxGitStdout  = 64 << 10
	maxGitMessage = 1 << 10         // of git's messages in an error, escaped
	gitWaitDelay  = 5 * time.Second // after git is killed, for its output to close
)

// fetchGit clones the repository into dst at the source's ref (a tag or a
// branch, shallow; a full commit hash, fetched by hash where the server
// allows it and from the whole repository where it does not; nothing: the
// default branch), checks that HEAD is the commit asked for, and removes
// .git. A commit with submodules is refused (they are not fetched, and
// the package would lack their files); Git LFS objects are not fetched.
func (f *Fetcher) fetchGit(ctx context.Context, src source, dst string) (Result, error) {
	dst, err := filepath.Abs(dst)
	if err != nil {
		return Result{}, err
	}
	home, err := os.MkdirTemp(filepath.Dir(dst), ".modfetch-home-*")
	if err != nil {
		return Result{}, fmt.Errorf("make git home directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(home) }()
	g, err := f.newGit(src.url, home)
	if err != nil {
		return Result{}, err
	}
	head, err := g.checkout(ctx, src, dst)
	if err != nil {
		return Result{}, err
	}
	if err := os.RemoveAll(filepath.Join(dst, ".git")); err != nil {
		return Result{}, fmt.Errorf("remove .git: %w", err)
	}
	return Result{Commit: head}, nil
}

// checkout fetches the ref into dst without checking it out, checks that
// the commit's files fit the module limits, then checks them out, and
// returns the commit.
func (g *gitRunner) checkout(ctx context.Context, src source, dst string) (string, error) {
	commit := isCommit(src.ref)
	target := "HEAD"
	var err error
	if commit {
		target, err = g.fetchCommit(ctx, src.url, strings.ToLower(src.ref), dst)
	} else {
		err = g.clone(ctx, src.url, src.ref, dst)
	}
	if err != nil {
		return "", err
	}
	head, err := g.resolve(ctx, dst, target)
	switch {
	case err != nil && commit:
		return "", fmt.Errorf("commit %s is not in the repository: %w", src.ref, err)
	case err != nil:
		return "", err
	case commit && head != strings.ToLower(src.ref):
		return "", fmt.Errorf("git fetched %s, not the commit %s asked for", head, src.ref)
	}
	if err := g.checkTreeSize(ctx, dst, head); err != nil {
		return "", err
	}
	if err := g.checkoutFiles(ctx, dst, head); err != nil {
		return "", err
	}
	return head, nil
}

// gitRunner runs git non-interactively, with no configuration but its own.
type gitRunner struct {
	bin    string
	config []string // "-c" arguments before the subcommand
	env    []string
	secret string // the Authorization value, never shown
	// noCert is the https host no client certificate is presented to, for
	// the hint when its server refuses the TLS handshake; "" for none.
	noCert string
	// limits bound the repository while it is fetched and the checkout.
	limits hashing.ModuleLimits
}

// newGit prepares git for fetching u, with home as its HOME: an empty
// directory of the fetch's own (mode 0700), removed when the fetch ends,
// which also holds the client certificate and key git presents to u's
// host, if it has one.
func (f *Fetcher) newGit(u *url.URL, home string) (*gitRunner, error) {
	g := &gitRunner{bin: f.git, env: gitEnv(f.environ, home), limits: f.limits, config: []string{
		"-c", "credential.helper=",
		"-c", "protocol.allow=never",
		"-c", "protocol.https.allow=always",
		"-c", "core.symlinks=true",
		"-c", "advice.detachedHead=false",
		"-c", "init.defaultBranch=main",
	}}
	g.config = append(g.config, lowSpeed(f.net)...)
	if u.Scheme == "http" { // only to loopback hosts: checkTransport
		g.config = append(g.config, "-c", "protocol.http.allow=always")
	}
	// Settings for this URL's scheme and host only, as key, value pairs.
	var scoped []string
	prefix := "http." + u.Scheme + "://" + u.Host + "/."
	if auth, ok := f.credentials(u.Host); ok {
		if strings.ContainsAny(auth, "\r\n\x00") {
			return nil, fmt.Errorf("credentials for %s hold a line break", u.Host)
		}
		g.secret = auth
		scoped = append(scoped, prefix+"extraHeader", "Authorization: "+auth)
	}
	if cert, ok := f.clientCert(u); ok {
		certFile, keyFile, err := writeClientCert(home, cert)
		if err != nil {
			return nil, fmt.Errorf("client certificate for %s: %w", u.Hostname(), err)
		}
		scoped = append(scoped, prefix+"sslCert", certFile, prefix+"sslKey", keyFile)
	} else if u.Scheme == "https" {
		g.noCert = u.Hostname()
	}
	if len(scoped) == 0 {
		return g, nil
	}
	// A redirect would make git send the header, and present the client
	// certificate, to the other host with every later request: refused
	// while either is in use.
	g.config = append(g.config, "-c", "http.followRedirects=false")
	// Through the environment, not "-c": command lines are visible to
	// every user of the machine.
	g.env = append(g.env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(scoped)/2))
	for i := 0; i < len(scoped); i += 2 {
		g.env = append(g.env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i/2, scoped[i]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i/2, scoped[i+1]))
	}
	return g, nil
}

// clientCert returns the client certificate to present to u's host: over
// https only, to that host name whatever the port, as httpx.PerHost
// presents it.
func (f *Fetcher) clientCert(u *url.URL) (tls.Certificate, bool) {
	if u.Scheme != "https" {
		return tls.Certificate{}, false
	}
	cert, ok := f.clientCerts[strings.ToLower(u.Hostname())]
	return cert, ok
}

// writeClientCert writes cert's chain and its key (PKCS #8) as PEM files
// of mode 0600 into dir, a directory only this user can enter, for git's
// http.sslCert and http.sslKey, and returns their paths. Errors name no
// key material.
func writeClientCert(dir string, cert tls.Certificate) (certFile, keyFile string, err error) {
	if len(cert.Certificate) == 0 {
		return "", "", errors.New("no certificate")
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", "", fmt.Errorf("a %T key cannot be handed to git", cert.PrivateKey)
	}
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	defer clear(key)
	clear(der)
	var chain []byte
	for _, c := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	certFile, keyFile = filepath.Join(dir, "client-cert.pem"), filepath.Join(dir, "client-key.pem")
	if err := writePrivate(certFile, chain); err != nil {
		return "", "", err
	}
	if err := writePrivate(keyFile, key); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// writePrivate writes data to a new file of mode 0600.
func writePrivate(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// gitEnv is base without HOME, XDG_CONFIG_HOME, SSH_ASKPASS and every GIT_*
// variable but GIT_SSL_CAINFO and GIT_SSL_CAPATH (no GIT_DIR, no
// GIT_CONFIG_*, no GIT_TRACE*), with what keeps git from reading any
// configuration but its own or asking anyone anything; GIT_SSL_CAINFO
// comes from SSL_CERT_FILE when only that is set.
func gitEnv(base []string, home string) []string {
	var env []string
	var certFile, caInfo string
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || dropVar(k) {
			continue
		}
		switch k {
		case "SSL_CERT_FILE":
			certFile = v
		case "GIT_SSL_CAINFO":
			caInfo = v
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "GCM_INTERACTIVE=never", "GIT_CONFIG_NOSYSTEM=1")
	if caInfo == "" && certFile != "" {
		env = append(env, "GIT_SSL_CAINFO="+certFile)
	}
	return env
}

// dropVar says which variables of the caller's environment git must not
// see.
func dropVar(name string) bool {
	switch name {
	case "GIT_SSL_CAINFO", "GIT_SSL_CAPATH":
		return false
	case "HOME", "XDG_CONFIG_HOME", "SSH_ASKPASS", "GCM_INTERACTIVE":
		return true
	}
	return strings.HasPrefix(name, "GIT_")
}

// clone makes a shallow clone of ref (a tag or branch; "" for the default
// branch) into dst, without checking it out, while the repository stays
// within the module limits.
func (g *gitRunner) clone(ctx context.Context, u *url.URL, ref, dst string) error {
	args := []string{"--quiet", "--no-checkout", "--depth", "1", "--no-tags", "--single-branch"}
	if ref != "" {
		args = append(args, "--branch", ref)
	}
	_, err := g.runIn(ctx, g.repoArea(dst), filepath.Dir(dst), "clone", append(args, "--", u.String(), dst)...)
	return err
}

// fetchCommit fetches one commit by its hash into a new repository in dst,
// without checking it out, and returns what names it (FETCH_HEAD, or the
// hash); when the server refuses to serve a commit by hash, it fetches
// every branch and tag instead. The repository stays within the module
// limits.
func (g *gitRunner) fetchCommit(ctx context.Context, u *url.URL, sha, dst string) (string, error) {
	if _, err := g.run(ctx, dst, "init", "--quiet"); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, dst, "remote", "add", "origin", u.String()); err != nil {
		return "", err
	}
	repo := g.repoArea(dst)
	_, err := g.runIn(ctx, repo, dst, "fetch", "--quiet", "--depth", "1", "--no-tags", "origin", sha)
	if err == nil {
		return "FETCH_HEAD", nil
	}
	var over *areaError
	if ctx.Err() != nil || errors.As(err, &over) {
		return "", err
	}
	if _, err2 := g.runIn(ctx, repo, dst, "fetch", "--quiet", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*"); err2 != nil {
		return "", fmt.Errorf("%w; then fetch the whole repository: %w", err, err2)
	}
	return sha, nil
}

// resolve returns the commit that target names in the repository in dir.
func (g *gitRunner) resolve(ctx context.Context, dir, target string) (string, error) {
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", target+"^{commit}")
	if err != nil {
		return "", err
	}
	head := strings.TrimSpace(out)
	if !isCommit(head) {
		return "", fmt.Errorf("git rev-parse %s answered %s, not a commit hash", target, excerpt.Quote(head))
	}
	return head, nil
}

// checkTreeSize refuses a commit whose files would not fit the module
// limits once checked out, from the sizes the repository records for them
// (git ls-tree), before a byte of them is written.
func (g *gitRunner) checkTreeSize(ctx context.Context, dir, commit string) error {
	sizer := &treeSizer{limits: g.limits}
	_, err := g.runOut(ctx, nil, dir, sizer, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit)
	if sizer.err != nil {
		return fmt.Errorf("commit %s: %w: not checked out", commit, sizer.err)
	}
	if err == nil {
		err = sizer.finish()
	}
	if err != nil {
		return fmt.Errorf("read the files of commit %s: %w", commit, err)
	}
	return nil
}

// noConversion turns off every git attribute that rewrites a file's
// content when it is checked out (line endings, $Id$, filters, encodings),
// whatever the repository's .gitattributes say: the package holds the
// commit's files as they are, so the sizes checkTreeSize read are the
// sizes written.
const noConversion = "* -text -eol -crlf -ident -filter -working-tree-encoding\n"

// checkoutFiles writes the commit's files into dir, as they are in the
// commit, while the checkout stays within the module limits.
func (g *gitRunner) checkoutFiles(ctx context.Context, dir, commit string) error {
	info := filepath.Join(dir, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return fmt.Errorf("prepare the checkout: %w", err)
	}
	if err := os.WriteFile(filepath.Join(info, "attributes"), []byte(noConversion), 0o644); err != nil {
		return fmt.Errorf("prepare the checkout: %w", err)
	}
	work := &area{dir: dir, skip: ".git", what: "the checkout", maxBytes: g.limits.MaxBytes, maxEntries: g.limits.MaxFiles}
	_, err := g.runIn(ctx, work, dir, "reset", "--quiet", "--hard", commit)
	return err
}

// repoArea is the work area of a fetch into dst: the repository, pack
// files included, may hold at most the module limits.
func (g *gitRunner) repoArea(dst string) *area {
	return &area{dir: dst, what: "the repository", maxBytes: g.limits.MaxBytes, maxEntries: g.limits.MaxFiles}
}

// isCommit reports whether ref is a full commit hash (SHA-1 or SHA-256).
func isCommit(ref string) bool {
	if len(ref) != 40 && len(ref) != 64 {
		return false
	}
	return !strings.ContainsFunc(ref, func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'f') && (r < 'A' || r > 'F')
	})
}

// run runs "git <config> <sub> <args>" in dir and returns its output. An
// error holds the end of git's messages, without userinfo or credentials,
// with control characters escaped.
func (g *gitRunner) run(ctx context.Context, dir, sub string, args ...string) (string, error) {
	return g.runOut(ctx, nil, dir, nil, sub, args...)
}

// runIn is run while watching the work area: git is stopped as soon as
// it holds more than the area allows.
func (g *gitRunner) runIn(ctx context.Context, work *area, dir, sub string, args ...string) (string, error) {
	return g.runOut(ctx, work, dir, nil, sub, args...)
}

// runOut is run with the work area watched (unless work is nil) and, when
// out is set, git's output written to it rather than returned. git runs in
// a process group of its own, killed whole when ctx ends or the work area
// is over its limits, and (on Linux) killed when tfmirror dies.
func (g *gitRunner) runOut(ctx context.Context, work *area, dir string, out io.Writer, sub string, args ...string) (string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(ctx, g.bin, slices.Concat(g.config, []string{sub}, args)...)
	cmd.Dir = dir
	cmd.Env = g.env
	stdout := &headBuffer{max: maxGitStdout}
	stderr := &tailBuffer{max: maxGitStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if out != nil {
		cmd.Stdout = out
	}
	cmd.WaitDelay = gitWaitDelay
	killGroup(cmd)
	err := runLocked(cmd, func() func() error {
		if work == nil {
			return func() error { return nil }
		}
		return work.watch(cancel)
	})
	var over *areaError
	switch {
	case errors.As(err, &over):
		return "", fmt.Errorf("git %s stopped: %w", sub, over)
	case err == nil:
		return stdout.String(), nil
	case ctx.Err() != nil:
		err = ctx.Err()
	case errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("run git (Config.Git, or git from PATH): %w", err)
	}
	msg := g.redact(stderr.String())
	if msg == "" {
		return "", fmt.Errorf("git %s: %w", sub, err)
	}
	return "", fmt.Errorf("git %s: %w: %s", sub, err, g.certHint(msg))
}

// certHint adds to git's message, when it may be a server's refusal of a
// client that presented no certificate, how to present one.
func (g *gitRunner) certHint(msg string) string {
	if g.noCert == "" || !tlsRefusal.MatchString(msg) {
		return msg
	}
	return msg + fmt.Sprintf(" (if the server requires a client certificate, mutual TLS, add a client_certificate block for %s to the manifest)", g.noCert)
}

// tlsRefusal matches what curl says when the server ends the connection
// during or right after the TLS handshake, as a server that requires a
// client certificate answers a client without one: with TLS 1.3 the
// client may have sent its request by then, so curl reports the alert
// (GnuTLS: "A TLS fatal alert has been received"; OpenSSL names it), or
// the closed connection as it found it.
var tlsRefusal = regexp.MustCompile(`(?i)TLS fatal alert|alert (certificate required|handshake failure|bad certificate)|` +
	`getpeername\(\) failed|Send failure|Recv failure|Connection reset by peer|non-properly terminated|SSL_(read|write)|` +
	`SSL_ERROR_SYSCALL|unexpected eof|Empty reply from server`)

// redact takes userinfo and the credentials out of git's messages (which
// hold what the server said, its "remote:" lines), puts them on one line,
// escapes control characters (a server's terminal escape sequences) and
// keeps the end of them, at most maxGitMessage bytes.
func (g *gitRunner) redact(msg string) string {
	if g.secret != "" {
		msg = strings.ReplaceAll(msg, g.secret, "xxxxx")
	}
	msg = excerpt.WithoutUserinfo(strings.TrimSpace(msg))
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " | ")), " ")
	return tail(escapeControl(msg), maxGitMessage)
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it: git says why it
// failed at the end.
type tailBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.truncated = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	if b.truncated {
		return "..." + string(b.buf)
	}
	return string(b.buf)
}
