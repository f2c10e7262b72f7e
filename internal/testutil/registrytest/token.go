package registrytest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// The token authentication of Docker distribution (the flow Harbor, GHCR,
// ECR and GitLab use): the registry answers 401 with
//
//	WWW-Authenticate: Bearer realm="https://127.0.0.1:PORT/token",service="registrytest",scope="repository:NAME:pull,push"
//
// the client asks the realm for a token with the user's basic
// credentials, and the token (a JWT signed by the token service) lists
// the actions it allows per repository. docker-registry 2.8 checks iss,
// aud (= service), exp and nbf (60 s leeway), the signature, and that the
// signing key is trusted: by the "x5c" certificate chain of the header,
// verified up to a certificate of its rootcertbundle, or by a "kid" that
// is the libtrust fingerprint of the public key of a certificate in
// rootcertbundle (registry/auth/token/token.go, VerifySigningKey).

// TokenService and TokenIssuer are the registry's auth.token service and
// issuer: the "service" of its challenges, the "aud" and "iss" of the
// tokens.
const (
	TokenService = "registrytest"
	TokenIssuer  = "registrytest-token-issuer"
)

// TokenPolicy is what the token service grants.
type TokenPolicy struct {
	// Grants are the actions the server's user (Server.Username, with
	// Server.Password) may have on repositories. A requested scope gets
	// the requested actions that the first grant whose Prefix the
	// repository name starts with allows; a repository no grant matches
	// gets none.
	Grants []Grant
	// Anonymous are the grants of a token request without credentials.
	Anonymous []Grant
	// Refuse answers a token request asking for anything not granted
	// with 403 and a distribution error body (code DENIED), as GHCR and
	// ECR refuse. Without it the token only lists what is granted (an
	// empty access list if nothing is), as docker's reference token
	// server, Harbor and GitLab do: the registry then answers 401 with
	// error="insufficient_scope".
	Refuse bool
	// KeyID names the signing key in the token's header by "kid" (its
	// libtrust fingerprint, looked up in rootcertbundle) instead of an
	// "x5c" certificate chain.
	KeyID bool
}

// Grant allows Actions ("pull", "push", "delete" or "*") on the
// repositories whose names start with Prefix ("tf/"; "" is every one).
type Grant struct {
	Prefix  string
	Actions []string
}

// Access is one entry of a token's "access" claim.
type Access struct {
	Type    string   `json:"type"` // "repository", "registry"
	Name    string   `json:"name"` // "tf/registry.opentofu.org/hashicorp/foo", "catalog"
	Actions []string `json:"actions"`
}

// TokenRequest is one request the token service answered.
type TokenRequest struct {
	Method string
	// User is the basic-auth user name given, "" for none;
	// Authenticated says whether the password was right.
	User          string
	Authenticated bool
	Service       string
	// Scopes are the scopes requested, each "type:name:actions" as sent
	// (several "scope" parameters, or several scopes separated by spaces
	// in one).
	Scopes []string
	// Status is the HTTP status answered; Granted the token's access
	// claim (nil unless Status is 200).
	Status  int
	Granted []Access
	// Token is the JWT issued, "" unless Status is 200: a test can check
	// that it never shows in a message.
	Token string
}

// TokenServer is the token service of a registry started with
// StartWithToken: an httptest TLS server of the test process, with a
// certificate of the registry's CA. Safe for concurrent use.
type TokenServer struct {
	// URL is "https://127.0.0.1:PORT"; Realm is URL + "/token", the realm
	// of the registry's challenges.
	URL   string
	Realm string
	// RootCertFile is the registry's rootcertbundle: the certificate
	// that signs (x5c) or is (kid) the token signing key.
	RootCertFile string

	policy   TokenPolicy
	user     string
	password string
	srv      *httptest.Server
	key      *ecdsa.PrivateKey // signs tokens
	x5c      []string          // base64 DER of the signing certificate (x5c mode)
	kid      string            // libtrust fingerprint of key (kid mode)

	mu       sync.Mutex
	requests []TokenRequest
}

// StartWithToken runs a registry whose authentication is Docker's token
// flow, with its token service in the test process (Tokens) granting by
// policy, and a Docker config file holding the user's credentials for it.
// ca nil makes a new CA. Without docker-registry the test is skipped, or
// fails under serverproc.Required.
func StartWithToken(t testing.TB, ca *testca.CA, policy TokenPolicy) *Server {
	t.Helper()
	return StartWith(t, Options{CA: ca, Token: &policy})
}

// startTokenServer starts the token service of user and password, its
// signing key and its rootcertbundle written into dir.
func startTokenServer(t testing.TB, ca *testca.CA, dir, user, password string, policy TokenPolicy) *TokenServer {
	t.Helper()
	ts := &TokenServer{policy: policy, user: user, password: password}

	// A throwaway root, in the registry's rootcertbundle, and a signing
	// certificate it signs (x5c mode); in kid mode the root's own key signs.
	rootKey := newECKey(t)
	rootTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "registrytest token root"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatalf("registrytest: token root certificate: %v", err)
	}
	ts.RootCertFile = filepath.Join(dir, "token-root.pem")
	if err := os.WriteFile(ts.RootCertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	if policy.KeyID {
		ts.key = rootKey
		ts.kid = libtrustKeyID(t, &rootKey.PublicKey)
	} else {
		root, err := x509.ParseCertificate(rootDER)
		if err != nil {
			t.Fatal(err)
		}
		ts.key = newECKey(t)
		leafTmpl := &x509.Certificate{
			SerialNumber: big.NewInt(2),
			Subject:      pkix.Name{CommonName: "registrytest token signer"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}
		leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &ts.key.PublicKey, rootKey)
		if err != nil {
			t.Fatalf("registrytest: token signing certificate: %v", err)
		}
		ts.x5c = []string{base64.StdEncoding.EncodeToString(leafDER)}
	}

	ts.srv = httptest.NewUnstartedServer(http.HandlerFunc(ts.serve))
	ts.srv.TLS = ca.TLSConfig(t, "127.0.0.1", "localhost")
	ts.srv.StartTLS()
	t.Cleanup(ts.srv.Close)
	ts.URL = ts.srv.URL
	ts.Realm = ts.URL + "/token"
	return ts
}

func newECKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// libtrustKeyID is the fingerprint docker's libtrust gives a public key,
// which docker-registry's token auth expects as "kid": SHA-256 of its
// PKIX DER, truncated to 240 bits, base32 without padding, in groups of
// four separated by colons.
func libtrustKeyID(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	s := strings.TrimRight(base32.StdEncoding.EncodeToString(sum[:30]), "=")
	var groups []string
	for len(s) > 4 {
		groups = append(groups, s[:4])
		s = s[4:]
	}
	return strings.Join(append(groups, s), ":")
}

// serve answers GET /token?service=...&scope=... (the distribution token
// protocol; the OAuth2 POST form is not served).
func (ts *TokenServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/token" {
		http.NotFound(w, r)
		return
	}
	rec := TokenRequest{Method: r.Method, Service: r.URL.Query().Get("service")}
	defer func() {
		ts.mu.Lock()
		ts.requests = append(ts.requests, rec)
		ts.mu.Unlock()
	}()
	if r.Method != http.MethodGet {
		rec.Status = http.StatusMethodNotAllowed
		tokenError(w, rec.Status, "UNSUPPORTED", "the token service serves GET only")
		return
	}
	for _, param := range r.URL.Query()["scope"] {
		rec.Scopes = append(rec.Scopes, strings.Fields(param)...)
	}
	grants := ts.policy.Anonymous
	if user, password, ok := r.BasicAuth(); ok {
		rec.User = user
		rec.Authenticated = subtle.ConstantTimeCompare([]byte(user), []byte(ts.user)) == 1 &&
			subtle.ConstantTimeCompare([]byte(password), []byte(ts.password)) == 1
		if !rec.Authenticated {
			rec.Status = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Basic realm="registrytest-token"`)
			tokenError(w, rec.Status, "UNAUTHORIZED", "authentication required: wrong user name or password")
			return
		}
		grants = ts.policy.Grants
	}
	if rec.Service != TokenService {
		rec.Status = http.StatusBadRequest
		tokenError(w, rec.Status, "UNSUPPORTED", fmt.Sprintf("unknown service %q", rec.Service))
		return
	}
	access, refused := grant(grants, rec.Scopes)
	if refused != "" && ts.policy.Refuse {
		rec.Status = http.StatusForbidden
		tokenError(w, rec.Status, "DENIED", "requested access to the resource is denied: "+refused)
		return
	}
	now := time.Now()
	token, err := ts.sign(map[string]any{
		"iss":    TokenIssuer,
		"sub":    rec.User,
		"aud":    TokenService,
		"exp":    now.Add(5 * time.Minute).Unix(),
		"nbf":    now.Unix(),
		"iat":    now.Unix(),
		"jti":    serverproc.RandomHex(16),
		"access": access,
	})
	if err != nil {
		rec.Status = http.StatusInternalServerError
		tokenError(w, rec.Status, "UNKNOWN", err.Error())
		return
	}
	rec.Status, rec.Granted, rec.Token = http.StatusOK, access, token
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"token": token, "access_token": token,
		"expires_in": 300, "issued_at": now.UTC().Format(time.RFC3339),
	})
}

// grant is the access claim for scopes under grants, and the first scope
// that asked for more than granted ("" if none did). Only repository
// scopes are granted; a scope of another type ("registry:catalog:*") gets
// nothing.
func grant(grants []Grant, scopes []string) (access []Access, refused string) {
	access = []Access{}
	for _, scope := range scopes {
		typ, rest, ok1 := strings.Cut(scope, ":")
		i := strings.LastIndex(rest, ":")
		if !ok1 || i < 0 {
			if refused == "" {
				refused = scope
			}
			continue
		}
		name, requested := rest[:i], strings.Split(rest[i+1:], ",")
		var allowed []string
		if typ == "repository" {
			for _, g := range grants {
				if strings.HasPrefix(name, g.Prefix) {
					allowed = g.Actions
					break
				}
			}
		}
		var got []string
		for _, a := range requested {
			if slices.Contains(allowed, a) || slices.Contains(allowed, "*") {
				got = append(got, a)
			} else if refused == "" {
				refused = scope
			}
		}
		if len(got) > 0 {
			access = append(access, Access{Type: typ, Name: name, Actions: got})
		}
	}
	return access, refused
}

// sign makes a JWT (ES256) of claims with the header docker-registry
// needs to find the key: x5c, or kid.
func (ts *TokenServer) sign(claims map[string]any) (string, error) {
	header := map[string]any{"typ": "JWT", "alg": "ES256"}
	if ts.kid != "" {
		header["kid"] = ts.kid
	} else {
		header["x5c"] = ts.x5c
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	digest := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, ts.key, digest[:])
	if err != nil {
		return "", err
	}
	// JWS: r and s, each 32 bytes big-endian (not ASN.1).
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + enc.EncodeToString(sig), nil
}

// tokenError writes a distribution-style error body.
func tokenError(w http.ResponseWriter, status int, code, message string) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": message}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// Requests returns every request the token service answered so far, in
// order.
func (ts *TokenServer) Requests() []TokenRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.requests)
}

// Scopes returns every scope requested so far, each once, in the order
// first requested.
func (ts *TokenServer) Scopes() []string {
	var out []string
	for _, r := range ts.Requests() {
		for _, s := range r.Scopes {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// Tokens returns every token issued so far.
func (ts *TokenServer) Tokens() []string {
	var out []string
	for _, r := range ts.Requests() {
		if r.Token != "" {
			out = append(out, r.Token)
		}
	}
	return out
}

// summary describes the requests for a failed test's log, without the
// tokens.
func (ts *TokenServer) summary() string {
	var b strings.Builder
	for _, r := range ts.Requests() {
		fmt.Fprintf(&b, "%s user=%q authenticated=%v service=%q scopes=%q -> %d granted=%+v\n",
			r.Method, r.User, r.Authenticated, r.Service, r.Scopes, r.Status, r.Granted)
	}
	return b.String()
}
