package modfetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Bounds on what is kept of git's output.
const (
	maxGitStderr = 4 << 10
	maxGitStdout = 64 << 10
	gitWaitDelay = 5 * time.Second // after git is killed, for its output to close
)

// fetchGit clones the repository into dst at the source's ref (a tag or a
// branch, shallow; a full commit hash, fetched by hash where the server
// allows it and from the whole repository where it does not; nothing: the
// default branch), checks that HEAD is the commit asked for, and removes
// .git. Submodules and Git LFS objects are not fetched.
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

// checkout fetches the ref into dst and returns the commit checked out.
func (g *gitRunner) checkout(ctx context.Context, src source, dst string) (string, error) {
	commit := isCommit(src.ref)
	var err error
	if commit {
		err = g.checkoutCommit(ctx, src.url, strings.ToLower(src.ref), dst)
	} else {
		err = g.clone(ctx, src.url, src.ref, dst)
	}
	if err != nil {
		return "", err
	}
	head, err := g.head(ctx, dst)
	switch {
	case err != nil:
		return "", err
	case commit && head != strings.ToLower(src.ref):
		return "", fmt.Errorf("git checked out %s, not the commit %s asked for", head, src.ref)
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
}

// newGit prepares git for fetching u, with home as its HOME: an empty
// directory of the fetch's own (mode 0700), removed when the fetch ends,
// which also holds the client certificate and key git presents to u's
// host, if it has one.
func (f *Fetcher) newGit(u *url.URL, home string) (*gitRunner, error) {
	g := &gitRunner{bin: f.git, env: gitEnv(f.environ, home), config: []string{
		"-c", "credential.helper=",
		"-c", "protocol.allow=never",
		"-c", "protocol.https.allow=always",
		"-c", "core.symlinks=true",
		"-c", "advice.detachedHead=false",
		"-c", "init.defaultBranch=main",
	}}
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
// branch) into dst.
func (g *gitRunner) clone(ctx context.Context, u *url.URL, ref, dst string) error {
	args := []string{"--quiet", "--depth", "1", "--no-tags", "--single-branch"}
	if ref != "" {
		args = append(args, "--branch", ref)
	}
	_, err := g.run(ctx, filepath.Dir(dst), "clone", append(args, "--", u.String(), dst)...)
	return err
}

// checkoutCommit fetches one commit by its hash into a new repository in
// dst and checks it out; when the server refuses to serve a commit by
// hash, it fetches every branch and tag instead.
func (g *gitRunner) checkoutCommit(ctx context.Context, u *url.URL, sha, dst string) error {
	if _, err := g.run(ctx, dst, "init", "--quiet"); err != nil {
		return err
	}
	if _, err := g.run(ctx, dst, "remote", "add", "origin", u.String()); err != nil {
		return err
	}
	target := "FETCH_HEAD"
	_, err := g.run(ctx, dst, "fetch", "--quiet", "--depth", "1", "--no-tags", "origin", sha)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if _, err2 := g.run(ctx, dst, "fetch", "--quiet", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*"); err2 != nil {
			return fmt.Errorf("%w; then fetch the whole repository: %w", err, err2)
		}
		target = sha
	}
	if _, err := g.run(ctx, dst, "checkout", "--quiet", "--detach", target); err != nil {
		return fmt.Errorf("commit %s is not in the repository: %w", sha, err)
	}
	return nil
}

// head returns the commit checked out in dir.
func (g *gitRunner) head(ctx context.Context, dir string) (string, error) {
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	head := strings.TrimSpace(out)
	if !isCommit(head) {
		return "", fmt.Errorf("git rev-parse HEAD answered %s, not a commit hash", excerpt.Quote(head))
	}
	return head, nil
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
// error holds the end of git's messages, without userinfo or credentials.
func (g *gitRunner) run(ctx context.Context, dir, sub string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, slices.Concat(g.config, []string{sub}, args)...)
	cmd.Dir = dir
	cmd.Env = g.env
	stdout := &headBuffer{max: maxGitStdout}
	stderr := &tailBuffer{max: maxGitStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = gitWaitDelay
	killGroup(cmd)
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	switch {
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

// redact takes userinfo and the credentials out of git's messages and puts
// them on one line.
func (g *gitRunner) redact(msg string) string {
	if g.secret != "" {
		msg = strings.ReplaceAll(msg, g.secret, "xxxxx")
	}
	msg = redactText(strings.TrimSpace(msg))
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " | ")), " ")
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
