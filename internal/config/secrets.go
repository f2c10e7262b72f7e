package config

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfmirror/tfmirror/internal/environ"
)

// maxAuthFileBytes bounds what is read of a Docker-style config file for
// its secrets.
const maxAuthFileBytes = 1 << 20

// dockerSecrets returns the passwords and tokens of the Docker-style
// config files an OCI registry client reads (see ocistore.Config):
// $DOCKER_CONFIG/config.json or $HOME/.docker/config.json, and the
// containers-auth.json files, so that what is printed never shows one.
// A file that is missing or does not parse holds none; credential
// helpers are not run.
func dockerSecrets(env environ.Env) []string {
	var files []string
	if d := env["DOCKER_CONFIG"]; d != "" {
		files = append(files, filepath.Join(d, "config.json"))
	} else if h := env["HOME"]; h != "" {
		files = append(files, filepath.Join(h, ".docker", "config.json"))
	}
	if f := env["REGISTRY_AUTH_FILE"]; f != "" {
		files = append(files, f)
	}
	if d := env["XDG_RUNTIME_DIR"]; d != "" {
		files = append(files, filepath.Join(d, "containers", "auth.json"))
	}
	if d := env["XDG_CONFIG_HOME"]; d != "" {
		files = append(files, filepath.Join(d, "containers", "auth.json"))
	} else if h := env["HOME"]; h != "" {
		files = append(files, filepath.Join(h, ".config", "containers", "auth.json"))
	}
	var out []string
	for _, f := range files {
		out = append(out, authFileSecrets(f)...)
	}
	return out
}

func authFileSecrets(file string) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxAuthFileBytes))
	if err != nil {
		return nil
	}
	var cfg struct {
		Auths map[string]struct {
			Auth          string `json:"auth"`
			Password      string `json:"password"`
			IdentityToken string `json:"identitytoken"`
			RegistryToken string `json:"registrytoken"`
		} `json:"auths"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return nil
	}
	var out []string
	for _, a := range cfg.Auths {
		out = append(out, a.Auth, a.Password, a.IdentityToken, a.RegistryToken)
		if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
			if _, pass, ok := strings.Cut(string(raw), ":"); ok {
				out = append(out, pass)
			}
		}
	}
	return out
}
