package ocistore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// What went wrong talking to a registry. An *Error wraps one of these
// (when one applies) and the error it was made from.
var (
	// ErrUnauthorized: the registry refused the credentials (401).
	ErrUnauthorized = errors.New("the registry refused the credentials (401 Unauthorized)")
	// ErrNoCredentials: the registry requires credentials and none were
	// found for it.
	ErrNoCredentials = errors.New("the registry requires credentials, and none were found for it")
	// ErrDenied: the credentials may not do this (403).
	ErrDenied = errors.New("the registry denied access (403 Forbidden)")
	// ErrOutOfScope: the registry's token service accepted the
	// credentials, but the token it issued does not cover the repository
	// or the action (401 insufficient_scope, as Harbor and GitLab answer).
	// It matches ErrDenied too.
	ErrOutOfScope error = outOfScopeError{}
	// ErrUnreachable: no connection to the registry.
	ErrUnreachable = errors.New("the registry cannot be reached")
	// ErrUntrusted: the registry's certificate is not trusted.
	ErrUntrusted = errors.New("the registry's TLS certificate is not trusted (set SSL_CERT_FILE to the PEM file of its certificate authority)")
	// ErrRefused: the registry refused content it was sent.
	ErrRefused = errors.New("the registry refused the content; it may not accept OpenTofu's media types " +
		"(an image index with artifactType " + ArtifactTypeProvider + ", image manifests with artifactType " +
		ArtifactTypeProviderTarget + ", the " + `"application/vnd.oci.empty.v1+json" config and ` + MediaTypeZip + " layers): allow them in the registry's settings")
	// ErrNoRepository: the registry answered 404 to a push: the repository
	// does not exist and the registry does not create repositories on push.
	ErrNoRepository = errors.New("the repository does not exist (404), and the registry does not create it on push: " +
		"create it first (Amazon ECR, for one, requires that), or check the repository template")
	// ErrNotProvider: a tag holds something OpenTofu cannot install a
	// provider from.
	ErrNotProvider = errors.New("not an OpenTofu provider release")
	// ErrTemplate: the repository template does not fit a provider: it
	// gives an invalid repository address, or the repository of another
	// provider. Found without contacting the registry; the error's message
	// names the template and the providers.
	ErrTemplate = errors.New("the repository template does not fit the providers")
)

// templateError is an error of the repository template for a provider:
// its message as it is, and errors.Is(err, ErrTemplate).
type templateError struct{ error }

func (e templateError) Unwrap() error        { return e.error }
func (e templateError) Is(target error) bool { return target == ErrTemplate }

// Error is a failure of an operation on a provider's repository, or on a
// module package's. Its message names the provider or module, the version
// (when there is one) and the repository, and never holds a credential.
type Error struct {
	Op       string // "push", "read", "list the versions of"
	Provider addrs.Provider
	// Module is the module package of an operation on one (Provider is
	// zero then).
	Module     addrs.Module
	Version    string // "" for an operation on the whole repository
	Repository string // as Store.Repository names it
	Kind       error  // one of the Err* values above, or nil
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(" ")
	if e.Module != (addrs.Module{}) {
		b.WriteString("module ")
		b.WriteString(e.Module.String())
	} else {
		b.WriteString(e.Provider.String())
	}
	if e.Version != "" {
		b.WriteString(" ")
		b.WriteString(e.Version)
	}
	switch e.Op {
	case "push":
		b.WriteString(" to ")
	default:
		b.WriteString(" in ")
	}
	b.WriteString(e.Repository)
	b.WriteString(": ")
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// classify returns which Err* value describes err, or nil.
func classify(err error) error {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			return ErrUnauthorized
		case http.StatusForbidden:
			return ErrDenied
		case http.StatusNotFound:
			if resp.Method == http.MethodPost || resp.Method == http.MethodPut || resp.Method == http.MethodPatch {
				return ErrNoRepository
			}
		case http.StatusUnsupportedMediaType:
			return ErrRefused
		case http.StatusBadRequest:
			for _, e := range resp.Errors {
				switch e.Code {
				case errcode.ErrorCodeManifestInvalid, errcode.ErrorCodeUnsupported, errcode.ErrorCodeBlobUploadInvalid, "MANIFEST_UNVERIFIED", "TAG_INVALID":
					return ErrRefused
				}
			}
		}
		return nil
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return ErrNoCredentials
	}
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	if errors.As(err, &cert) || errors.As(err, &unknown) || errors.As(err, &hostname) {
		return ErrUntrusted
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) {
		return ErrUnreachable
	}
	return nil
}

// isNotFound reports whether err says a tag, manifest, blob or repository
// does not exist.
func isNotFound(err error) bool {
	if errors.Is(err, errdef.ErrNotFound) {
		return true
	}
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound
}

// transient reports whether retrying what failed with err may help.
func transient(err error) bool {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	}
	if kind := classify(err); errors.Is(kind, ErrUntrusted) || errors.Is(kind, ErrNoCredentials) {
		return false
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

type outOfScopeError struct{}

func (outOfScopeError) Error() string {
	return "the registry denied access: the token its token service issued for these credentials does not cover this repository or action (401 insufficient_scope)"
}

func (outOfScopeError) Is(target error) bool { return target == ErrDenied }

// ErrListTooLong means a registry's listing (a repository's tags, a
// manifest's referrers) went on past tfmirror's bounds (Config.MaxTags,
// Config.MaxListPages, maxReferrers): it is refused, not read to its end.
var ErrListTooLong = errors.New("the registry's listing goes on past tfmirror's bound")
