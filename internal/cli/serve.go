package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	appserve "github.com/tfmirror/tfmirror/internal/app/serve"
	"github.com/tfmirror/tfmirror/internal/output"
)

func newServeCmd(env Env) *cobra.Command {
	var opts appserve.Options
	var logRequests bool
	cmd := &cobra.Command{
		Use:   "serve SITE",
		Short: "Serve a mirror over HTTPS, for trials and small deployments",
		Long: `serve serves a mirror tree over HTTPS with the content types OpenTofu
requires (application/json for index.json, <version>.json and registry
replica documents), the catalog page at /, without directory listings, and
without tfmirror's private .tfmirror/ directory.

With --cert and --key it uses your certificate, and refuses one that
clients would refuse: expired, not valid yet, or not valid for a name
given with --hostname (one that expires within 30 days is served, with a
warning). Without them it uses a certificate authority it keeps in
SITE/.tfmirror/ (the certificate with its private key, readable by you
only) and a server certificate for --hostname (default: localhost,
127.0.0.1 and the listen address) made from it on each start. The first start makes the CA; later starts reuse it, so clients that
trust it keep working across restarts. A new CA is made only with --new-ca
or when the kept one is within 30 days of expiry (it is valid for 5 years).
--ca-out writes a copy of the CA certificate for clients. Nothing is
written when the server cannot start. It serves until interrupted.`,
		Example: `  tfmirror serve site
  tfmirror serve site --listen 0.0.0.0:8443 --hostname mirror.internal --ca-out mirror-ca.pem
  tfmirror serve site --listen :443 --cert mirror.pem --key mirror-key.pem`,
		Args: oneArgument,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Site = args[0]
			out := env.printer(cmd)
			if logRequests {
				opts.Log = env.Stderr
				if env.session.json {
					opts.Log = lineEvents{out} // stdout carries JSON lines only
				}
			}
			opts.Started = func(s appserve.Serving) {
				out.Line(fmt.Sprintf("serving %s at %s", s.Root, s.URL))
				out.Warnings(s.Warnings)
				if s.CA != nil {
					out.Line(caLine(s))
				}
				out.Line(fmt.Sprintf("client configuration:\n  provider_installation {\n    network_mirror {\n      url = %q\n    }\n  }", s.URL))
			}
			return env.run.serve(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", "127.0.0.1:8443", "address to listen on (port 0 picks a free one)")
	f.StringVar(&opts.CertFile, "cert", "", "PEM certificate (chain) to serve with")
	f.StringVar(&opts.KeyFile, "key", "", "PEM private key of --cert")
	f.StringArrayVar(&opts.Hostnames, "hostname", nil, "name or IP address the generated certificate is valid for; with --cert, one the certificate must be valid for (repeatable)")
	f.StringVar(&opts.CAOut, "ca-out", "", "also write the CA certificate to `file`, for clients (it is kept in SITE/.tfmirror/serve-ca.pem)")
	f.BoolVar(&opts.NewCA, "new-ca", false, "replace the kept CA with a new one (every client must then trust the new one)")
	f.BoolVar(&logRequests, "log", false, "print one line per request")
	return cmd
}

// caLine says which CA clients must trust, and whether it is the one they
// trust already.
func caLine(s appserve.Serving) string {
	file := s.CAFile
	if s.CAOut != "" {
		file = s.CAOut
	}
	line := fmt.Sprintf("clients must trust the CA in %s (for example SSL_CERT_FILE=%s, or add it to the system store)", file, file)
	if s.NewCA {
		return line + "; it is new: give it to every client"
	}
	return line + fmt.Sprintf("; the same CA as before, valid until %s", s.CA.NotAfter.UTC().Format("2006-01-02"))
}

// lineEvents turns each line written into a message event, for --log
// with --json.
type lineEvents struct{ out *output.Printer }

func (l lineEvents) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		if line = strings.TrimRight(line, "\n"); line != "" {
			l.out.Line(line)
		}
	}
	return len(p), nil
}
