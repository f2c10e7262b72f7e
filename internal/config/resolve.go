package config

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
)

// Resolve reads the manifest the flags name and builds the settings a
// command runs with: the one place they are built. A missing manifest is
// an input error unless optional and not named explicitly: then it is an
// empty one (the defaults). Client certificates are loaded here, so a
// file that cannot be read fails every command alike, before any request.
func Resolve(f settings.Flags, p settings.Process, optional bool) (*Manifest, settings.Settings, error) {
	// Flags that cannot work fail before the manifest is read.
	if err := (Settings{}).NetworkPolicy(f.Net, f.NetSet).Validate(); err != nil {
		return nil, settings.Settings{}, inputerr.Wrap(fmt.Errorf("network flags: %w", err))
	}
	m, err := Load(f.Config)
	switch {
	case errors.Is(err, fs.ErrNotExist) && optional && !f.ConfigSet:
		m = &Manifest{}
	case errors.Is(err, fs.ErrNotExist):
		return nil, settings.Settings{}, inputerr.Wrap(fmt.Errorf("%w (write a manifest or pass --config)", err))
	case err != nil:
		return nil, settings.Settings{}, err
	}
	s, err := m.SettingsFor(f, p)
	return m, s, err
}

// SettingsFor builds the settings of a command from the manifest, the flags
// and the process: the defaults, then the manifest's settings, then the
// flags given; credentials from the manifest, then TF_TOKEN_* variables.
func (m *Manifest) SettingsFor(f settings.Flags, p settings.Process) (settings.Settings, error) {
	if f.LockTimeout < 0 {
		return settings.Settings{}, inputerr.Wrap(fmt.Errorf("--lock-timeout must not be negative (0 fails at once when another writer holds the lock), not %s", f.LockTimeout))
	}
	env := environ.Parse(p.Environ)
	net := m.Settings.NetworkPolicy(f.Net, f.NetSet)
	if err := net.Validate(); err != nil {
		return settings.Settings{}, inputerr.Wrap(fmt.Errorf("network settings: %w", err))
	}
	certs, err := m.loadClientCertificates()
	if err != nil {
		return settings.Settings{}, err
	}
	s := settings.Settings{
		Env:                env,
		UserAgent:          p.UserAgent,
		Net:                net,
		ClientCertificates: certs,
		Tokens:             maps.Clone(m.Tokens),
		Services:           m.Services,
		Locations:          m.Locations(),
		OCITokenRealms:     m.Settings.OCITokenRealms,
		Hosts:              httpx.NewHosts(),
		Trust:              m.TrustPolicy(f.RequireSignatures),
		VulnDB:             cmp.Or(f.VulnDB, m.VulnDB),
		Advisories:         m.Advisories,
		ZipLimits:          m.Settings.ZipLimits(),
		ModuleTree:         m.Settings.ModuleTreeLimits(),
		Lists:              m.Settings.ListLimits(),
		Parallel:           f.Parallel,
		LockTimeout:        f.LockTimeout,
		CacheDir:           cacheDir(env),
		Now:                p.Now,
		Command:            p.Command,
	}
	if s.SignKey, s.CatalogKeys, err = readKeys(f, m.Settings.CatalogKey); err != nil {
		return settings.Settings{}, err
	}
	s = s.WithTokens(TokensFromEnv(p.Environ))
	s.Upstreams = m.Upstreams
	// Every credential the command holds is known to what prints its
	// output before any request is made.
	p.Redactor.Add(s.Secrets()...)
	p.Redactor.Add(dockerSecrets(env)...)
	return s, nil
}

// loadClientCertificates reads the client_certificate blocks' files. A
// file that cannot be read or a key that does not match is bad input
// naming the host and the files.
func (m *Manifest) loadClientCertificates() (map[string]tls.Certificate, error) {
	out := make(map[string]tls.Certificate, len(m.ClientCertificates))
	for host, c := range m.ClientCertificates {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("client_certificate %q: cert_file %s, key_file %s: %w", host.ForDisplay(), c.CertFile, c.KeyFile, err))
		}
		out[strings.ToLower(string(host))] = cert
	}
	return out, nil
}

// cacheDir is where a command keeps what it reuses between runs on this
// machine: $XDG_CACHE_HOME/tfmirror, else ~/.cache/tfmirror.
func cacheDir(env environ.Env) string {
	if dir := env.First("XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, "tfmirror")
	}
	if home := env.First("HOME"); home != "" {
		return filepath.Join(home, ".cache", "tfmirror")
	}
	return ""
}

// readKeys reads the key files the flags name: the private key that signs
// (--sign-key) and the public keys a signed catalog is checked with
// (--catalog-key, else the manifest's settings catalog_key). A key's
// material is never part of an error.
func readKeys(f settings.Flags, manifestCatalogKey string) (*signing.SigningKey, *signing.TrustedKeys, error) {
	var sign *signing.SigningKey
	var trusted *signing.TrustedKeys
	if f.SignKey != "" {
		data, err := os.ReadFile(f.SignKey)
		if err != nil {
			return nil, nil, inputerr.Wrap(fmt.Errorf("--sign-key: %w", err))
		}
		if sign, err = signing.ReadSigningKey(data); err != nil {
			return nil, nil, inputerr.Wrap(fmt.Errorf("--sign-key %s: %w", f.SignKey, err))
		}
	}
	path, what := f.CatalogKey, "--catalog-key"
	if path == "" {
		path, what = manifestCatalogKey, "settings catalog_key"
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, inputerr.Wrap(fmt.Errorf("%s: %w", what, err))
		}
		if trusted, err = signing.ReadTrustedKeys(data); err != nil {
			return nil, nil, inputerr.Wrap(fmt.Errorf("%s %s: %w", what, path, err))
		}
	}
	return sign, trusted, nil
}
