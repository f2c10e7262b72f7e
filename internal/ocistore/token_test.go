package ocistore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// The token tests run the registry with Docker's token authentication
// (the flow of Harbor, GHCR, ECR, GitLab): the user may pull and push the
// repositories under tf/, only pull those under ro/, and nothing else.

// tokenPolicy grants the registry's user pull and push under tf/, pull
// under ro/.
func tokenPolicy() registrytest.TokenPolicy {
	return registrytest.TokenPolicy{Grants: []registrytest.Grant{
		{Prefix: "tf/", Actions: []string{"pull", "push"}},
		{Prefix: "ro/", Actions: []string{"pull"}},
	}}
}

// captureLogs sends the standard logger's and slog's default output to
// a buffer until the test ends.
func captureLogs(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w := &lockedWriter{w: &buf}
	prevOut, prevSlog := log.Writer(), slog.Default()
	log.SetOutput(w)
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		log.SetOutput(prevOut)
		slog.SetDefault(prevSlog)
	})
	return &buf
}

// lockedWriter is safe for the concurrent writes of parallel uploads.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// noToken fails the test if one of texts holds a token the token
// service issued, its signature, anything shaped like a JWT (a header
// starting `{"`, "eyJ" in base64url) or the password.
func noToken(t *testing.T, srv *registrytest.Server, texts map[string]string) {
	t.Helper()
	tokens := srv.Tokens.Tokens()
	for what, text := range texts {
		if strings.Contains(text, "eyJ") || strings.Contains(text, "Bearer ") {
			t.Errorf("%s holds something like a token:\n%s", what, text)
		}
		for _, tok := range tokens {
			// The signature alone is a secret too: look for it as well.
			sig := tok[strings.LastIndex(tok, ".")+1:]
			if strings.Contains(text, tok) || strings.Contains(text, sig) {
				t.Errorf("%s holds a token the token service issued:\n%s", what, text)
			}
		}
		if strings.Contains(text, srv.Password) {
			t.Errorf("%s holds the password:\n%s", what, text)
		}
	}
}

// TestTokenAuthPush pushes two providers into a registry with token
// authentication, with the credentials from a Docker config file: the
// pushes succeed, each repository gets tokens of its own scope (never a
// registry-wide one), a token of one repository opens no other, and no
// token shows in what was logged or reported.
func TestTokenAuthPush(t *testing.T) {
	for _, keyID := range []bool{false, true} {
		name := "x5c"
		if keyID {
			name = "kid"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			policy := tokenPolicy()
			policy.KeyID = keyID
			srv := registrytest.StartWithToken(t, nil, policy)
			logs := captureLogs(t)
			s := openTokenStore(t, srv, "oci://"+template(srv), registryEnviron(t, srv))
			foo, bar := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseProvider("hashicorp/bar")
			repos := map[string]string{} // repository name -> its provider
			var reports []string
			for _, p := range []addrs.Provider{foo, bar} {
				rel := newRelease(t, p, "1.0.0", "", "linux_amd64", "darwin_arm64")
				rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
				if err != nil {
					t.Fatalf("Push %s with token authentication: %v", p, err)
				}
				reports = append(reports, fmt.Sprintf("%+v", rep))
				name := "tf/registry.opentofu.org/hashicorp/" + p.Type
				if rep.Repository != srv.Host+"/"+name || !rep.IndexPushed || rep.BlobsUploaded != 6 {
					t.Errorf("report %+v", rep)
				}
				repos[name] = p.String()
				got, found, err := s.Release(ctx, p, rel.Version)
				if err != nil || !found || len(got.Archives) != 2 {
					t.Errorf("Release %s after the push: %+v, %v, %v", p, got, found, err)
				}
			}
			if err := s.Ping(ctx, foo); err != nil {
				t.Errorf("Ping: %v", err)
			}
			if n := len(srv.ManifestPuts(t)); n != 12 {
				t.Errorf("the registry accepted %d manifests, want 12 (per provider: 2 platforms, the index by digest, the provenance, its referrers tag and the tag)", n)
			}

			// Scopes: every one names one of the pushed repositories (no
			// "*", no registry:catalog), each request asks for one
			// repository at most, and each repository was asked for push.
			pushed := map[string]bool{}
			for _, r := range srv.Tokens.Requests() {
				if r.Status != http.StatusOK || !r.Authenticated {
					t.Errorf("token request %q answered %d (authenticated %v)", r.Scopes, r.Status, r.Authenticated)
				}
				named := map[string]bool{}
				for _, scope := range r.Scopes {
					typ, rest, _ := strings.Cut(scope, ":")
					i := strings.LastIndex(rest, ":")
					if typ != "repository" || i < 0 || strings.Contains(scope, "*") {
						t.Errorf("scope %q requested: want repository:NAME:ACTIONS of one repository", scope)
						continue
					}
					name, actions := rest[:i], strings.Split(rest[i+1:], ",")
					if _, ok := repos[name]; !ok {
						t.Errorf("scope %q names a repository that was not pushed", scope)
					}
					named[name] = true
					if slices.Contains(actions, "push") {
						pushed[name] = true
					}
				}
				if len(named) > 1 {
					t.Errorf("one token request asked for several repositories: %q", r.Scopes)
				}
				for _, a := range r.Granted {
					if !named[a.Name] {
						t.Errorf("a token for %q grants %+v", r.Scopes, a)
					}
				}
			}
			for name := range repos {
				if !pushed[name] {
					t.Errorf("no token was asked to push %s; scopes requested: %q", name, srv.Tokens.Scopes())
				}
			}
			t.Logf("scopes requested: %q", srv.Tokens.Scopes())

			// A token of foo's repository opens foo's, not bar's.
			fooTok := ""
			for _, r := range srv.Tokens.Requests() {
				if len(r.Granted) == 1 && r.Granted[0].Name == "tf/registry.opentofu.org/hashicorp/foo" && slices.Contains(r.Granted[0].Actions, "pull") {
					fooTok = r.Token
				}
			}
			if fooTok == "" {
				t.Fatal("no token of foo's repository was issued")
			}
			if got := bearerGet(t, srv, "/v2/tf/registry.opentofu.org/hashicorp/foo/tags/list", fooTok); got != http.StatusOK {
				t.Errorf("foo's token on foo's tags: %d, want 200", got)
			}
			if got := bearerGet(t, srv, "/v2/tf/registry.opentofu.org/hashicorp/bar/tags/list", fooTok); got != http.StatusUnauthorized {
				t.Errorf("foo's token on bar's tags: %d, want 401", got)
			}

			noToken(t, srv, map[string]string{"the logs": logs.String(), "the reports": strings.Join(reports, "\n")})
		})
	}
}

// bearerGet is the status of a GET of path with token, independently of
// the code under test.
func bearerGet(t *testing.T, srv *registrytest.Server, path, token string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.CA.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestTokenAuthDenied pushes into a repository outside the user's
// scope (one the user may not touch, one the user may only pull): the
// push fails, naming the repository and saying that access was denied,
// writes nothing, and holds no token. Registries refuse in two ways: the
// token service issues a token without the actions (the reference token
// server, Harbor, GitLab; the registry then answers 401 with
// error="insufficient_scope"), or it refuses the token request (403, as
// GHCR and ECR do).
func TestTokenAuthDenied(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string // of the repository pushed into
		refuse bool   // TokenPolicy.Refuse
	}{
		{"no access/token without the scope", "other", false},
		{"no access/token request refused", "other", true},
		{"pull only/token without the scope", "ro", false},
		{"pull only/token request refused", "ro", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			policy := tokenPolicy()
			policy.Refuse = tc.refuse
			srv := registrytest.StartWithToken(t, nil, policy)
			logs := captureLogs(t)
			foo := addrs.MustParseProvider("hashicorp/foo")
			rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
			s := openTokenStore(t, srv, "oci://"+srv.Host+"/"+tc.prefix+"/${hostname}/${namespace}/${type}", registryEnviron(t, srv))
			before := len(srv.Requests(t))

			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Push outside the user's scope panicked: %v", p)
					}
				}()
				_, err = s.Push(ctx, rel.Release, ocistore.PushOptions{})
			}()
			if err == nil {
				t.Fatal("Push outside the user's scope succeeded")
			}
			t.Logf("Push outside the user's scope: %v", err)
			var e *ocistore.Error
			if !errors.As(err, &e) {
				t.Errorf("the error is not an *ocistore.Error: %T", err)
			}
			repo := srv.Host + "/" + tc.prefix + "/registry.opentofu.org/hashicorp/foo"
			checkNames(t, err, []string{srv.Password}, "registry.opentofu.org/hashicorp/foo", "1.0.0", repo)
			for _, r := range srv.Requests(t)[before:] {
				if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Status < 300 {
					t.Errorf("the refused push wrote: %s %s (%d)", r.Method, r.URI, r.Status)
				}
			}
			for _, r := range srv.Tokens.Requests() {
				if !r.Authenticated {
					t.Errorf("token request without the user's credentials: %+v", r)
				}
			}
			name := tc.prefix + "/registry.opentofu.org/hashicorp/foo"
			refused := 0
			for _, r := range srv.Tokens.Requests() {
				if r.Status == http.StatusForbidden {
					refused++
				}
				for _, a := range r.Granted {
					if a.Name != name || slices.Contains(a.Actions, "push") || (tc.prefix == "other" && len(a.Actions) > 0) {
						t.Errorf("the token service granted %+v", a)
					}
				}
			}
			if tc.refuse != (refused > 0) {
				t.Errorf("the token service refused %d token requests", refused)
			}
			noToken(t, srv, map[string]string{"the error": err.Error(), "the logs": logs.String()})

			if !errors.Is(err, ocistore.ErrDenied) || !strings.Contains(strings.ToLower(err.Error()), "denied") {
				t.Errorf("the error does not say that access was denied (errors.Is(err, ErrDenied) = %v):\n%v", errors.Is(err, ocistore.ErrDenied), err)
			}
			if errors.Is(err, ocistore.ErrUnauthorized) {
				t.Errorf("the error says the credentials were refused; they were accepted, the repository is outside their scope:\n%v", err)
			}
		})
	}
}

// TestTokenAuthWrongPassword: a password the token service refuses is
// reported as refused credentials (not as a denial), naming the
// repository and where the credentials came from.
func TestTokenAuthWrongPassword(t *testing.T) {
	srv := registrytest.StartWithToken(t, nil, tokenPolicy())
	wrong := srv.WrongDockerConfig(t)
	s := openTokenStore(t, srv, "oci://"+template(srv), []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + wrong, "HOME=" + t.TempDir()})
	rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64")
	_, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{})
	if !errors.Is(err, ocistore.ErrUnauthorized) {
		t.Fatalf("Push with a wrong password: %v, want ErrUnauthorized", err)
	}
	t.Logf("Push with a wrong password: %v", err)
	checkNames(t, err, []string{srv.Password, "wrong-" + srv.Password}, srv.Host+"/tf/registry.opentofu.org/hashicorp/foo", wrong)
	if len(srv.Tokens.Tokens()) != 0 {
		t.Errorf("the token service issued a token for a wrong password")
	}
}

// openTokenStore opens ref in srv, a registry whose token service runs on
// another port of 127.0.0.1: the store is told, explicitly, that the
// registry's credentials may go there (Config.TokenRealms).
func openTokenStore(t testing.TB, srv *registrytest.Server, ref string, env []string) *ocistore.Store {
	t.Helper()
	s, err := ocistore.New(t.Context(), ref, ocistore.Config{
		Environ:     env,
		TokenRealms: map[string][]string{srv.Host: {strings.TrimPrefix(srv.Tokens.URL, "https://")}},
	})
	if err != nil {
		t.Fatalf("ocistore.New(%q): %v", ref, err)
	}
	return s
}

// TestTokenRealmElsewhereGetsNoPassword: a registry whose Bearer
// challenge names a token service on another host or port (here another
// port of 127.0.0.1: oras-go itself would send the password to any
// https realm with a public name) does not get the registry's
// credentials sent there unless the store is told that realm may have
// them: the push fails naming the registry, the realm and the setting,
// the token service never sees a user name or password, and no password
// shows in the error. An anonymous token request to the same realm is
// still made (it carries nothing).
func TestTokenRealmElsewhereGetsNoPassword(t *testing.T) {
	policy := tokenPolicy()
	policy.Anonymous = []registrytest.Grant{{Prefix: "tf/", Actions: []string{"pull"}}}
	srv := registrytest.StartWithToken(t, nil, policy)
	realm := strings.TrimPrefix(srv.Tokens.URL, "https://")
	for _, tc := range []struct {
		name   string
		realms map[string][]string
	}{
		{"no realm named", nil},
		{"a realm named for another registry", map[string][]string{"registry.example.com": {realm}}},
		{"another port of the realm's host named", map[string][]string{srv.Host: {"127.0.0.1:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.Tokens.Requests())
			s, err := ocistore.New(t.Context(), "oci://"+template(srv), ocistore.Config{Environ: registryEnviron(t, srv), TokenRealms: tc.realms})
			if err != nil {
				t.Fatal(err)
			}
			rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64")
			_, err = s.Push(t.Context(), rel.Release, ocistore.PushOptions{})
			for _, r := range srv.Tokens.Requests()[before:] {
				if r.User != "" {
					t.Errorf("the token service on another port got the user %q (authenticated %v)", r.User, r.Authenticated)
				}
			}
			var re *ocistore.RealmError
			if !errors.As(err, &re) || re.Registry != srv.Host || !strings.Contains(re.Realm, realm) {
				t.Fatalf("Push with the realm on another port: %v, want a RealmError naming %s and %s", err, srv.Host, realm)
			}
			checkNames(t, err, []string{srv.Password}, srv.Host, realm, "oci_token_realms")
			if n := srv.BlobUploads(t); n != 0 {
				t.Errorf("%d blobs uploaded", n)
			}
		})
	}
	t.Run("anonymous", func(t *testing.T) {
		before := len(srv.Tokens.Requests())
		s, err := ocistore.New(t.Context(), "oci://"+template(srv), ocistore.Config{Environ: []string{"SSL_CERT_FILE=" + srv.CAFile, "HOME=" + t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Release(t.Context(), addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("9.9.9")); err != nil {
			t.Errorf("anonymous read through the realm on another port: %v", err)
		}
		if reqs := srv.Tokens.Requests()[before:]; len(reqs) == 0 || reqs[0].User != "" {
			t.Errorf("token requests %+v, want anonymous ones", reqs)
		}
	})
	t.Run("realm named", func(t *testing.T) {
		s := openTokenStore(t, srv, "oci://"+template(srv), registryEnviron(t, srv))
		rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64")
		if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err != nil {
			t.Fatalf("Push with the realm named: %v", err)
		}
		if reqs := srv.Tokens.Requests(); len(reqs) == 0 || !reqs[len(reqs)-1].Authenticated {
			t.Errorf("the named realm was not asked with the credentials: %+v", reqs)
		}
	})
}
