package mirror

import (
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Need is what one root module needs of one provider: every version
// constraint declared for it across the module tree, and the version its
// lock file pins, if any.
type Need struct {
	Provider    addrs.Provider
	Constraints []string
	Locked      *addrs.Version
	// LockedAs is the provider the lock file pins Locked under when it
	// is not Provider: OpenTofu takes a lock of
	// registry.terraform.io/hashicorp/TYPE for
	// registry.opentofu.org/hashicorp/TYPE. Zero otherwise.
	LockedAs addrs.Provider
	// ImpliedHost says the configuration names the provider without a
	// registry host somewhere: Terraform reads that address on
	// registry.terraform.io, where Provider (as OpenTofu) has
	// registry.opentofu.org.
	ImpliedHost bool
	// Root names the root module, for messages.
	Root string
}

// Allowed intersects the need's constraints, as OpenTofu does.
func (n Need) Allowed() (addrs.VersionSet, error) {
	set, err := addrs.ParseConstraints(strings.Join(n.Constraints, ", "))
	if err != nil {
		return set, fmt.Errorf("%s: provider %s: %w", n.Root, n.Provider, err)
	}
	return set, nil
}

// Requirement turns a need into what to mirror: the locked version if the
// lock file pins one (it must satisfy the constraints), otherwise the
// newest release that satisfies them.
func (n Need) Requirement(platforms []addrs.Platform) (Requirement, error) {
	allowed, err := n.Allowed()
	if err != nil {
		return Requirement{}, err
	}
	req := Requirement{
		Provider:    n.Provider,
		Constraints: strings.Join(n.Constraints, ", "),
		Allowed:     allowed,
		Newest:      1,
		Platforms:   platforms,
	}
	if n.Locked == nil {
		return req, nil
	}
	if !allowed.Has(*n.Locked) {
		return Requirement{}, fmt.Errorf("%s: the lock file pins %s %s, which does not satisfy the configuration's constraints %q; run \"tofu init -upgrade\" or fix the constraints",
			n.Root, n.Provider, n.Locked, req.Constraints)
	}
	exact, err := addrs.ParseConstraints(n.Locked.String())
	if err != nil {
		return Requirement{}, fmt.Errorf("%s: provider %s: %w", n.Root, n.Provider, err)
	}
	req.Allowed, req.Constraints = exact, n.Locked.String()+" (locked)"
	return req, nil
}
