// Package serve is the serve command: it serves a mirror directory over
// HTTPS (package serve's handler and server), with the operator's
// certificate or one it makes.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
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
	// CAOut is where a generated CA certificate goes; "" means
	// SITE/.tfmirror/serve-ca.pem.
	CAOut string
	// Log, if set, gets one line per request.
	Log io.Writer
	// Started, if set, hears where the mirror is served once it is.
	Started func(Serving)
}

// Serving is a mirror being served.
type Serving struct {
	Root string // the directory served
	URL  string
	// CAFile is the CA clients must trust, when serve made one.
	CAFile string
}

// Run serves until ctx ends or the server fails.
func Run(ctx context.Context, opts Options) error {
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return inputerr.Wrap(errors.New("--cert and --key go together"))
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
	cert, caFile, err := certificate(opts, root)
	if err != nil {
		return err
	}
	srv, err := serve.Start(ctx, serve.Config{Root: root, Addr: opts.Listen, Certificate: cert, Log: opts.Log})
	if err != nil {
		return err
	}
	if opts.Started != nil {
		opts.Started(Serving{Root: root, URL: srv.URL, CAFile: caFile})
	}
	return srv.Wait()
}

// certificate loads the operator's certificate, or makes one and writes
// its CA where clients can get it.
func certificate(opts Options, root string) (tls.Certificate, string, error) {
	if opts.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return tls.Certificate{}, "", inputerr.Wrap(fmt.Errorf("load certificate: %w", err))
		}
		return cert, "", nil
	}
	hosts := opts.Hostnames
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1"}
		if h, _, err := net.SplitHostPort(opts.Listen); err == nil && h != "" && h != "localhost" && h != "127.0.0.1" && h != "0.0.0.0" {
			hosts = append(hosts, h)
		}
	}
	caPEM, cert, err := serve.SelfSigned(hosts, 90*24*time.Hour)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	caFile := opts.CAOut
	if caFile == "" {
		caFile = filepath.Join(root, layout.PrivateDirName, "serve-ca.pem")
	}
	if err := atomicfile.WriteFile(caFile, caPEM); err != nil {
		return tls.Certificate{}, "", err
	}
	abs, err := filepath.Abs(caFile)
	if err != nil {
		abs = caFile
	}
	_ = os.Chmod(abs, atomicfile.FileMode)
	return cert, abs, nil
}
