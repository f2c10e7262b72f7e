package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/serve"
	"github.com/tfmirror/tfmirror/layout"
)

// serveOptions are the flags of "tfmirror serve".
type serveOptions struct {
	Listen    string
	CertFile  string
	KeyFile   string
	Hostnames []string
	CAOut     string
	Log       bool
}

func newServeCmd(env Env) *cobra.Command {
	opts := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve SITE",
		Short: "Serve a mirror over HTTPS, for trials and small deployments",
		Long: `serve serves a mirror tree over HTTPS with the content types OpenTofu
requires (application/json for index.json, <version>.json and registry
replica documents), without directory listings, and without tfmirror's
private .tfmirror/ directory.

With --cert and --key it uses your certificate. Without them it makes a
certificate authority and a server certificate for --hostname (default:
localhost, 127.0.0.1 and the listen address), writes the CA to --ca-out and
prints how to trust it. It serves until interrupted.`,
		Example: `  tfmirror serve site
  tfmirror serve site --listen 0.0.0.0:8443 --hostname mirror.internal --ca-out mirror-ca.pem
  tfmirror serve site --listen :443 --cert mirror.pem --key mirror-key.pem`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (opts.CertFile == "") != (opts.KeyFile == "") {
				return usageError{fmt.Errorf("--cert and --key go together")}
			}
			return runServe(cmd.Context(), env, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8443", "address to listen on (port 0 picks a free one)")
	f.StringVar(&opts.CertFile, "cert", "", "PEM certificate (chain) to serve with")
	f.StringVar(&opts.KeyFile, "key", "", "PEM private key of --cert")
	f.StringArrayVar(&opts.Hostnames, "hostname", nil, "name or IP address the generated certificate is valid for (repeatable)")
	f.StringVar(&opts.CAOut, "ca-out", "", "where to write the generated CA certificate (default: SITE/.tfmirror/serve-ca.pem)")
	f.BoolVar(&opts.Log, "log", false, "print one line per request")
	return cmd
}

func runServe(ctx context.Context, env Env, opts serveOptions, site string) error {
	tree, err := layout.OpenExisting(site)
	if err != nil {
		return usageError{err}
	}
	root := tree.Location()
	cert, caFile, err := serverCertificate(opts, root)
	if err != nil {
		return err
	}
	cfg := serve.Config{Root: root, Addr: opts.Listen, Certificate: cert}
	if opts.Log {
		cfg.Log = env.Stderr
	}
	srv, err := serve.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "serving %s at %s\n", root, srv.URL)
	if caFile != "" {
		fmt.Fprintf(env.Stdout, "clients must trust the CA in %s (for example SSL_CERT_FILE=%s, or add it to the system store)\n", caFile, caFile)
	}
	fmt.Fprintf(env.Stdout, "client configuration:\n  provider_installation {\n    network_mirror {\n      url = %q\n    }\n  }\n", srv.URL)
	return srv.Wait()
}

// serverCertificate loads the operator's certificate, or makes one and
// writes its CA where clients can get it.
func serverCertificate(opts serveOptions, root string) (tls.Certificate, string, error) {
	if opts.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return tls.Certificate{}, "", usageError{fmt.Errorf("load certificate: %w", err)}
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
