package config

import (
	"slices"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/mirror"
)

// NetworkPolicy is the policy a command's requests run with (retries,
// timeouts and the transfer limits of speed and size): the defaults, then
// the manifest's settings, then the flags that were given (set holds their
// names, see NetworkFlags), so a flag always wins.
func (s Settings) NetworkPolicy(flags httpx.Policy, set map[string]bool) httpx.Policy {
	p := httpx.DefaultPolicy()
	if s.Retries != nil {
		p.Retries = *s.Retries
	}
	for _, d := range []struct {
		from *time.Duration
		to   *time.Duration
	}{{s.ConnectTimeout, &p.ConnectTimeout}, {s.HeaderTimeout, &p.HeaderTimeout}, {s.StallTimeout, &p.StallTimeout}} {
		if d.from != nil {
			*d.to = *d.from
		}
	}
	if set[settings.FlagRetries] {
		p.Retries = flags.Retries
	}
	if set[settings.FlagConnectTimeout] {
		p.ConnectTimeout = flags.ConnectTimeout
	}
	if set[settings.FlagHeaderTimeout] {
		p.HeaderTimeout = flags.HeaderTimeout
	}
	if set[settings.FlagStallTimeout] {
		p.StallTimeout = flags.StallTimeout
	}
	return s.transferLimits(p, flags, set)
}

// transferLimits applies the speed and size limits, with the same
// precedence.
func (s Settings) transferLimits(p, flags httpx.Policy, set map[string]bool) httpx.Policy {
	if s.SpeedLimit != nil {
		p.SpeedLimit = *s.SpeedLimit
	}
	if s.SpeedTime != nil {
		p.SpeedTime = *s.SpeedTime
	}
	if s.MaxArchiveBytes != nil {
		p.MaxBodyBytes = *s.MaxArchiveBytes
	}
	if set[settings.FlagSpeedLimit] {
		p.SpeedLimit = flags.SpeedLimit
	}
	if set[settings.FlagSpeedTime] {
		p.SpeedTime = flags.SpeedTime
	}
	if set[settings.FlagMaxArchiveBytes] {
		p.MaxBodyBytes = flags.MaxBodyBytes
	}
	return p
}

// ZipLimits are the defaults with the manifest's settings applied.
func (s Settings) ZipLimits() hashing.ZipLimits {
	l := hashing.DefaultZipLimits
	if s.MaxArchiveEntries != nil {
		l.MaxEntries = *s.MaxArchiveEntries
	}
	if s.MaxUnpackedBytes != nil {
		l.MaxUnpackedBytes = *s.MaxUnpackedBytes
	}
	return l
}

// ModuleTreeLimits are the defaults with the manifest's settings applied.
func (s Settings) ModuleTreeLimits() mirror.ModuleTreeLimits {
	l := mirror.DefaultModuleTreeLimits
	setInts(intSetting{s.MaxModuleDepth, &l.MaxDepth}, intSetting{s.MaxModules, &l.MaxModules}, intSetting{s.MaxModuleCalls, &l.MaxCalls})
	return l
}

// ListLimits are the manifest's bounds on paginated listings; unset
// ones are the adapters' defaults.
func (s Settings) ListLimits() settings.ListLimits {
	var l settings.ListLimits
	setInts(intSetting{s.MaxListPages, &l.MaxPages}, intSetting{s.MaxBucketObjects, &l.MaxObjects}, intSetting{s.MaxRepositoryTags, &l.MaxTags})
	return l
}

// intSetting is a whole-number setting the manifest may set (from) and
// where it goes (to).
type intSetting struct{ from, to *int }

// setInts applies the settings the manifest sets.
func setInts(list ...intSetting) {
	for _, c := range list {
		if c.from != nil {
			*c.to = *c.from
		}
	}
}

// TrustPolicy is the manifest's trust policy; requireSignatures (the
// command line's override) refuses unsigned releases for every provider,
// whatever the manifest says.
func (m *Manifest) TrustPolicy(requireSignatures bool) mirror.TrustPolicy {
	p := m.Trust
	if !requireSignatures {
		return p
	}
	refuse := true
	p.Default.RefuseUnsigned = &refuse
	p.Rules = slices.Clone(p.Rules)
	for i := range p.Rules {
		p.Rules[i].RefuseUnsigned = &refuse
	}
	return p
}
