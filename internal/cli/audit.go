package cli

import (
	"github.com/spf13/cobra"

	appaudit "github.com/tfmirror/tfmirror/internal/app/audit"
	"github.com/tfmirror/tfmirror/internal/settings"
)

func newAuditCmd(env Env) *cobra.Command {
	opts := appaudit.Options{Flags: settings.DefaultFlags()}
	cmd := &cobra.Command{
		Use:   "audit PATH_OR_URL|s3://BUCKET/PREFIX/|oci://TEMPLATE",
		Short: "Report the known vulnerabilities of every package a mirror holds, from its SBOMs",
		Long: `audit reads the SBOM published beside every package of a mirror already
built (a directory, an https:// mirror, a bucket, an OCI registry or image
layout) and matches the Go modules and Go version it lists against a Go
vulnerability database, as a build with --vulndb does: without downloading
any archive, several versions at once, reported in the mirror's order. Run
it every night with the newest
database: a release mirrored clean months ago is reported the day an
advisory about one of its modules is published.

An OCI registry cannot list its repositories: the manifest's provider
blocks name the providers to audit.

Each advisory is printed as a row (JSON: one "audit" event per package),
and packages without SBOM or with an SBOM that is not theirs are reported
as such. The exit code is 1 when a package has an advisory the policy does
not allow (the manifest's vulnerabilities blocks; without any, every
advisory), 3 when an SBOM fails its check, 2 for bad input, else 0.`,
		Example: `  tfmirror audit site --vulndb ./vulndb/data/osv
  tfmirror audit https://mirror.example.com/ --vulndb https://vuln.go.dev --json
  tfmirror audit s3://mirror/tf/ --vulndb osv-go.zip --config mirror.hcl`,
		Args: oneArgument,
		RunE: func(cmd *cobra.Command, args []string) error {
			given(cmd, &opts.Flags)
			opts.Mirror, opts.Process = args[0], env.process()
			out := env.printer(cmd)
			opts.Package = out.AuditPackage
			report, err := env.run.audit(cmd.Context(), opts)
			if report != nil {
				out.AuditSummary(report, err)
			}
			return err
		},
	}
	addConfigFlags(cmd, &opts.Flags, "whose vulnerabilities blocks decide which advisories fail the audit, whose vulndb is the default database, and whose settings apply (read if present; required if given)")
	addVulnDBFlag(cmd, &opts.Flags, "the Go vulnerability database to match against")
	addNetworkFlags(cmd, &opts.Flags)
	return cmd
}
