package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/mirror"
)

// trustFlags are the flags that choose the trust policy, the same for every
// command that decides whether a release is trusted (build, lock, verify,
// replica, bundle create and import), so a release gets the same verdict
// from each. The manifest they name also gives its settings block to the
// commands that make requests.
type trustFlags struct {
	Config            string
	RequireSignatures bool
	configSet         bool
	netSet            map[string]bool // network flags given on the command line
}

func addTrustFlags(cmd *cobra.Command, f *trustFlags) {
	cmd.Flags().StringVarP(&f.Config, "config", "c", "mirror.hcl", "manifest `file` whose trust blocks decide which releases are trusted, and whose settings apply (read if present; required if given)")
	cmd.Flags().BoolVar(&f.RequireSignatures, "require-signatures", false, "refuse releases without a valid OpenPGP signature, even from registry.opentofu.org where OpenTofu allows them")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		f.configSet = cmd.Flags().Changed("config")
		f.netSet = changedFlags(cmd, settings.NetworkFlags...)
	}
}

// manifest loads the manifest. Without --config, a missing mirror.hcl
// means an empty one (the default policy and settings).
func (f *trustFlags) manifest() (*config.Manifest, error) {
	m, err := config.Load(f.Config)
	if errors.Is(err, fs.ErrNotExist) && !f.configSet {
		return &config.Manifest{}, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageError{fmt.Errorf("--config: %w", err)}
	}
	if err != nil {
		return nil, fmt.Errorf("read the manifest: %w", err)
	}
	return m, nil
}

// policy is the manifest's trust policy, with --require-signatures applied.
func (f *trustFlags) policy() (mirror.TrustPolicy, error) {
	m, err := f.manifest()
	if err != nil {
		return mirror.TrustPolicy{}, err
	}
	return m.TrustPolicy(f.RequireSignatures), nil
}

// network is the request policy: the manifest's settings, then the flags
// given.
func (f *trustFlags) network(flags httpx.Policy) (httpx.Policy, error) {
	m, err := f.manifest()
	if err != nil {
		return httpx.Policy{}, err
	}
	p := m.Settings.NetworkPolicy(flags, f.netSet)
	if err := p.Validate(); err != nil {
		return httpx.Policy{}, usageError{err}
	}
	return p, nil
}
