package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/mirror"
)

// trustFlags are the flags that choose the trust policy, the same for every
// command that decides whether a release is trusted (build, lock, verify,
// replica, bundle create and import), so a release gets the same verdict
// from each.
type trustFlags struct {
	Config            string
	RequireSignatures bool
	configSet         bool
}

func addTrustFlags(cmd *cobra.Command, f *trustFlags) {
	cmd.Flags().StringVarP(&f.Config, "config", "c", "mirror.hcl", "manifest `file` whose trust blocks decide which releases are trusted (read if present; required if given)")
	cmd.Flags().BoolVar(&f.RequireSignatures, "require-signatures", false, "refuse releases without a valid OpenPGP signature, even from registry.opentofu.org where OpenTofu allows them")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) { f.configSet = cmd.Flags().Changed("config") }
}

// policy loads the manifest's trust policy, with --require-signatures
// applied. Without --config, a missing mirror.hcl means the default policy.
func (f *trustFlags) policy() (mirror.TrustPolicy, error) {
	m, err := config.Load(f.Config)
	if errors.Is(err, fs.ErrNotExist) && !f.configSet {
		m, err = &config.Manifest{}, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return mirror.TrustPolicy{}, usageError{fmt.Errorf("--config: %w", err)}
	}
	if err != nil {
		return mirror.TrustPolicy{}, fmt.Errorf("read the trust policy: %w", err)
	}
	return m.TrustPolicy(f.RequireSignatures), nil
}
