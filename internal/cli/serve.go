package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	appserve "github.com/tfmirror/tfmirror/internal/app/serve"
)

func newServeCmd(env Env) *cobra.Command {
	var opts appserve.Options
	var logRequests bool
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
			opts.Site = args[0]
			if logRequests {
				opts.Log = env.Stderr
			}
			out := env.printer(cmd)
			opts.Started = func(s appserve.Serving) {
				out.Line(fmt.Sprintf("serving %s at %s", s.Root, s.URL))
				if s.CAFile != "" {
					out.Line(fmt.Sprintf("clients must trust the CA in %s (for example SSL_CERT_FILE=%s, or add it to the system store)", s.CAFile, s.CAFile))
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
	f.StringArrayVar(&opts.Hostnames, "hostname", nil, "name or IP address the generated certificate is valid for (repeatable)")
	f.StringVar(&opts.CAOut, "ca-out", "", "where to write the generated CA certificate (default: SITE/.tfmirror/serve-ca.pem)")
	f.BoolVar(&logRequests, "log", false, "print one line per request")
	return cmd
}
