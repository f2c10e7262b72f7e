// Package serve is the serve command: it serves a mirror directory over
// HTTPS (package serve's handler and server), with the operator's
// certificate or one it makes.
package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/serve"
	"github.com/tfmirror/tfmirror/layout"
)

// Options say what to serve and how.
type Options struct {
	// Site is the mirror directory.
	Site      string
	Listen    string
	CertFile  string
	KeyFile   string
	Hostnames []string
	// CAOut is where a copy of the CA certificate goes, for clients; ""
	// means none besides the kept one, SITE/.tfmirror/serve-ca.pem.
	CAOut string
	// NewCA replaces the kept CA with a new one.
	NewCA bool
	// Log, if set, gets one line per request.
	Log io.Writer
	// Started, if set, hears where the mirror is served once it is.
	Started func(Serving)
}

// Serving is a mirror being served.
type Serving struct {
	Root string // the directory served
	URL  string
	// CAFile is the CA clients must trust, when serve made one; CAOut
	// the copy asked for, if any.
	CAFile, CAOut string
	// CA is that CA's certificate; NewCA says it was made by this start
	// (clients must be given it), not kept from an earlier one.
	CA    *x509.Certificate
	NewCA bool
	// Warnings are what the operator should know of what is served: a
	// directory that holds no mirror yet (a build may publish into it
	// next) serves nothing until one does.
	Warnings []string
}

// The kept CA, in the tree's private directory (never served): its
// certificate with its private key, readable by the owner only, and a copy
// of the certificate for clients, made from the first.
const (
	caKeyName = "serve-ca-key.pem"
	caName    = "serve-ca.pem"
)

const (
	// caValidity is how long a CA serve makes is valid: clients of an
	// air-gapped network trust it once, for years.
	caValidity = 5 * 365 * 24 * time.Hour
	// caRenewBefore: a kept CA that expires sooner is replaced.
	caRenewBefore = 30 * 24 * time.Hour
	// leafValidity bounds a server certificate, made anew on every start.
	leafValidity = 365 * 24 * time.Hour
)

// Run serves until ctx ends or the server fails. Nothing is written
// unless the server started: a start that fails (the port is taken)
// leaves the tree and --ca-out as they were.
func Run(ctx context.Context, opts Options) error {
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return inputerr.Wrap(errors.New("--cert and --key go together"))
	}
	if opts.CertFile != "" && (opts.NewCA || opts.CAOut != "") {
		return inputerr.Wrap(errors.New("--new-ca and --ca-out are for the CA serve makes, not with --cert and --key"))
	}
	if err := checkAddresses(opts); err != nil {
		return err
	}
	ref, err := endpoint.Parse(opts.Site)
	if err != nil {
		return err
	}
	if err := ref.Accept("serve", endpoint.Dir); err != nil {
		return err
	}
	tree, err := layout.OpenExisting(ref.Path)
	if err != nil {
		return inputerr.Wrap(err)
	}
	root := tree.Location()
	tlsCert, ca, err := certificate(opts, root)
	if err != nil {
		return err
	}
	warnings, err := checkOwnCertificate(opts, tlsCert, time.Now())
	if err != nil {
		return err
	}
	srv, err := serve.Start(ctx, serve.Config{Root: root, Addr: opts.Listen, Certificate: tlsCert, Log: opts.Log})
	if err != nil {
		return err
	}
	clientAt, warning := clientURL(srv.URL, opts, tlsCert)
	if warning != "" {
		warnings = append(warnings, warning)
	}
	serving := Serving{Root: root, URL: clientAt, Warnings: warnings}
	if endpoint.RequireMirror(ctx, ref, tree) != nil { // catalog.json first: no listing of a large tree
		serving.Warnings = append(serving.Warnings, root+" holds no mirror yet (no provider's index.json, no module): clients find nothing there until a build publishes into it")
	}
	if ca != nil {
		if serving, err = ca.save(serving, opts.CAOut); err != nil {
			_ = srv.Close()
			_ = srv.Wait()
			return err
		}
	}
	if opts.Started != nil {
		opts.Started(serving)
	}
	return srv.Wait()
}

// certificate loads the operator's certificate, or issues one from the
// kept CA (made if there is none, it expires soon, or NewCA).
func certificate(opts Options, root string) (tls.Certificate, *keptCA, error) {
	if opts.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return tls.Certificate{}, nil, inputerr.Wrap(fmt.Errorf("load certificate: %w", err))
		}
		return cert, nil, nil
	}
	ca, err := loadCA(filepath.Join(root, layout.PrivateDirName), opts.NewCA)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := ca.Issue(hostnames(opts), leafValidity)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return cert, ca, nil
}

// checkOwnCertificate refuses an operator's certificate (--cert) that no
// client would accept at now: not valid yet, expired, or not valid for a
// name given with --hostname. One that expires within caRenewBefore is a
// warning. A certificate serve issues needs no check.
func checkOwnCertificate(opts Options, cert tls.Certificate, now time.Time) ([]string, error) {
	if opts.CertFile == "" {
		return nil, nil
	}
	leaf, err := leafOf(cert)
	if err != nil {
		return nil, inputerr.Wrap(fmt.Errorf("--cert %s: %w", opts.CertFile, err))
	}
	const day = "2006-01-02 15:04 MST"
	switch {
	case len(certNames(leaf)) == 0:
		return nil, inputerr.Wrap(fmt.Errorf("--cert %s names no host (it has no subject alternative names): OpenTofu and Terraform ignore its common name and would refuse it", opts.CertFile))
	case now.Before(leaf.NotBefore):
		return nil, inputerr.Wrap(fmt.Errorf("--cert %s is not valid until %s: clients would refuse it", opts.CertFile, leaf.NotBefore.UTC().Format(day)))
	case now.After(leaf.NotAfter):
		return nil, inputerr.Wrap(fmt.Errorf("--cert %s expired on %s: clients would refuse it; renew it", opts.CertFile, leaf.NotAfter.UTC().Format(day)))
	}
	for _, h := range opts.Hostnames {
		if err := leaf.VerifyHostname(h); err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("--cert %s is not valid for --hostname %s (it is for %s): clients reaching the mirror by that name would refuse it", opts.CertFile, h, strings.Join(certNames(leaf), ", ")))
		}
	}
	if left := leaf.NotAfter.Sub(now); left < caRenewBefore {
		return []string{fmt.Sprintf("--cert %s expires on %s, in %s: renew it before clients refuse it", opts.CertFile, leaf.NotAfter.UTC().Format(day), plural.Count(int(left.Hours()/24), "day"))}, nil
	}
	return nil, nil
}

// clientURL is the URL clients reach the server at, listening at
// listenURL: the first --hostname when there is one (the name clients are
// meant to use); else that address, when the certificate is valid for it;
// else the first name the certificate is for that a client can dial (not
// a wildcard). Listening on every address (no client dials "[::]") with
// the certificate serve made, that is localhost, with a warning.
func clientURL(listenURL string, opts Options, cert tls.Certificate) (string, string) {
	u, err := url.Parse(listenURL)
	if err != nil {
		return listenURL, ""
	}
	leaf, err := leafOf(cert)
	if err != nil {
		return listenURL, ""
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	name, warning := "", ""
	switch dialable := slices.DeleteFunc(certNames(leaf), func(n string) bool { return strings.HasPrefix(n, "*") }); {
	case len(opts.Hostnames) > 0:
		name = opts.Hostnames[0]
	case (ip == nil || !ip.IsUnspecified()) && leaf.VerifyHostname(host) == nil:
		return listenURL, ""
	case len(dialable) > 0:
		name = dialable[0]
	default:
		return listenURL, fmt.Sprintf("the certificate is not valid for %s, nor for any name a client can dial: clients would refuse it", host)
	}
	if opts.CertFile == "" && len(opts.Hostnames) == 0 && ip != nil && ip.IsUnspecified() {
		warning = "serving on every address, but the certificate is for localhost and 127.0.0.1 only: clients on other machines would refuse it; pass --hostname with the name or address they use"
	}
	u.Host = net.JoinHostPort(name, u.Port())
	return u.String(), warning
}

// checkAddresses refuses a --listen that is not HOST:PORT (or :PORT) and
// a --hostname that is neither a DNS name nor an IP address, before any
// file is written or port taken.
func checkAddresses(opts Options) error {
	host, port, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return inputerr.Wrap(fmt.Errorf("--listen %s: %w: write HOST:PORT, such as 127.0.0.1:8443 or :8443", excerpt.Quote(opts.Listen), err))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return inputerr.Wrap(fmt.Errorf("--listen %s: the port must be a number from 0 to 65535", excerpt.Quote(opts.Listen)))
	}
	if host != "" && net.ParseIP(host) == nil && !dnsName.MatchString(host) {
		return inputerr.Wrap(fmt.Errorf("--listen %s: %s is neither an IP address nor a host name", excerpt.Quote(opts.Listen), excerpt.Quote(host)))
	}
	for _, h := range opts.Hostnames {
		if net.ParseIP(h) == nil && !dnsName.MatchString(h) {
			return inputerr.Wrap(fmt.Errorf("--hostname %s is neither a host name nor an IP address", excerpt.Quote(h)))
		}
	}
	return nil
}

// dnsName is a host name: dot-separated labels of letters, digits and
// inner hyphens, each at most 63 characters.
var dnsName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

// leafOf is the certificate a tls.Certificate presents first.
func leafOf(cert tls.Certificate) (*x509.Certificate, error) {
	if cert.Leaf != nil {
		return cert.Leaf, nil
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("no certificate")
	}
	return x509.ParseCertificate(cert.Certificate[0])
}

// certNames lists the names, then the addresses, a certificate is valid
// for.
func certNames(c *x509.Certificate) []string {
	names := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// hostnames are the names the server certificate is for: --hostname, or
// localhost, 127.0.0.1 and the listen address's host.
func hostnames(opts Options) []string {
	if len(opts.Hostnames) > 0 {
		return opts.Hostnames
	}
	hosts := []string{"localhost", "127.0.0.1"}
	if h, _, err := net.SplitHostPort(opts.Listen); err == nil && h != "" && h != "localhost" && h != "127.0.0.1" && h != "0.0.0.0" {
		hosts = append(hosts, h)
	}
	return hosts
}

// keptCA is the CA of a tree's private directory dir; made says it is new
// and not written yet.
type keptCA struct {
	*serve.CA
	dir  string
	made bool
}

// loadCA reads the kept CA of dir, or makes one when there is none, it
// expires within caRenewBefore, or fresh is set. A kept CA that cannot be
// read is an error naming its file: replacing it silently would break
// every client that trusts it.
func loadCA(dir string, fresh bool) (*keptCA, error) {
	keyFile := filepath.Join(dir, caKeyName)
	if !fresh {
		data, err := readSmall(keyFile)
		switch {
		case err == nil:
			ca, err := serve.ParseCA(data)
			if err != nil {
				return nil, inputerr.Wrap(fmt.Errorf("read the kept CA %s: %w (--new-ca makes a new one, which clients must then trust)", keyFile, err))
			}
			if time.Until(ca.Cert.NotAfter) > caRenewBefore {
				return &keptCA{CA: ca, dir: dir}, nil
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("read the kept CA: %w", err)
		}
	}
	ca, err := serve.NewCA(caValidity)
	if err != nil {
		return nil, err
	}
	return &keptCA{CA: ca, dir: dir, made: true}, nil
}

// save writes the certificate for clients at caOut, then keeps a new CA
// (certificate and key in one private file, written at once) and writes
// the certificate beside it, where either differs, and says where they
// are. --ca-out goes first: a start that cannot write it keeps no CA that
// no client was given (the next start would call it the same as before),
// and one that cannot keep the CA puts --ca-out back as it was.
func (ca *keptCA) save(s Serving, caOut string) (Serving, error) {
	if caOut != "" {
		before, readErr := readSmall(caOut)
		if err := writeIfChanged(caOut, ca.CertPEM()); err != nil {
			return s, fmt.Errorf("write --ca-out: %w", err)
		}
		s.CAOut = absolute(caOut)
		saved, err := ca.keep(s)
		if err != nil {
			if readErr == nil {
				_ = atomicfile.WriteFile(caOut, before)
			} else {
				_ = os.Remove(caOut)
			}
		}
		return saved, err
	}
	return ca.keep(s)
}

// keep keeps a new CA and writes its certificate beside it.
func (ca *keptCA) keep(s Serving) (Serving, error) {
	if ca.made {
		data, err := ca.PEM()
		if err != nil {
			return s, err
		}
		if err := atomicfile.WritePrivateFile(filepath.Join(ca.dir, caKeyName), data); err != nil {
			return s, fmt.Errorf("keep the CA: %w (serve keeps the CA it makes in the mirror's .tfmirror directory; for a mirror it cannot write to, give a certificate with --cert and --key)", err)
		}
	}
	certFile := filepath.Join(ca.dir, caName)
	if err := writeIfChanged(certFile, ca.CertPEM()); err != nil {
		return s, fmt.Errorf("write the CA certificate: %w", err)
	}
	s.CAFile, s.CA, s.NewCA = absolute(certFile), ca.Cert, ca.made
	return s, nil
}

// writeIfChanged writes data to path unless path holds it already.
func writeIfChanged(path string, data []byte) error {
	if old, err := readSmall(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return atomicfile.WriteFile(path, data)
}

// readSmall reads a regular file of at most 64 KiB, never through a link
// or from a pipe.
func readSmall(path string) ([]byte, error) {
	t, err := atomicfile.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer func() { _ = t.Close() }()
	return t.ReadFile(filepath.Base(path), 64<<10)
}

func absolute(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
