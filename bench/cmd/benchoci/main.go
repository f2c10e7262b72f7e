// Command benchoci is the OCI side of tfmirror's benchmark (bench/run,
// bench/README.md): a real registry on 127.0.0.1 whose own request log tells
// what its clients uploaded.
//
// It runs Debian's docker-registry (CNCF distribution 2.8; --registry, by
// default docker-registry on PATH) on a free port of 127.0.0.1, storing in
// --dir, over TLS with a certificate of a throwaway CA and with htpasswd
// (bcrypt) authentication for a random user, and reads the JSON log it
// writes: one "response completed" entry per request, counted by kind
// (see counters). It writes a Docker-style config.json holding the
// credentials, for DOCKER_CONFIG and oras --registry-config.
//
// It also listens on another free port of 127.0.0.1, plain HTTP, for two
// requests of the benchmark itself:
//
//	GET /_stats          the counters so far, KEY=VALUE lines; every request a
//	                     client saw answered before is in them (it first makes
//	                     a request of its own and waits for it in the log);
//	                     also largest_upload, the size of the largest blob
//	                     uploaded so far (a maximum, not a count)
//	GET /_tags?prefix=P  what the storage holds under repository prefix P:
//	                     repositories, tags, version_tags (tags not starting
//	                     "sha256-", the referrers tag schema), KEY=VALUE lines
//
// Once ready it writes --state-dir/oci.env (KEY=VALUE lines: OCI_HOST, the
// registry's 127.0.0.1:PORT; OCI_CA, the CA's PEM file; OCI_DOCKER_CONFIG,
// the directory of config.json; OCI_REGISTRY_CONFIG, config.json itself;
// OCI_STATS; OCI_TAGS; OCI_STORAGE; OCI_LOG, the registry's whole log;
// OCI_VERSION, docker-registry --version; OCI_REGISTRY_PID, its process;
// OCI_PID), mode 0600, written last.
// It serves until SIGINT or SIGTERM, then stops docker-registry.
//
// The test helper internal/testutil/registrytest runs docker-registry the
// same way (configuration, credentials); both start and stop it with
// internal/testutil/serverproc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tfmirror/tfmirror/bench/internal/benchenv"
)

func main() { os.Exit(benchenv.Main("benchoci", run)) }

type options struct {
	registry string
	dir      string
	stateDir string
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("benchoci", flag.ContinueOnError)
	fs.StringVar(&o.registry, "registry", "", "the docker-registry binary (default: docker-registry on PATH, else /usr/bin/docker-registry)")
	fs.StringVar(&o.dir, "dir", "", "the registry's storage directory (required)")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for oci.env, the CA, the credentials and the registry's log (required)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.dir == "" || o.stateDir == "" {
		return nil, errors.New("-dir and -state-dir are required")
	}
	if o.registry == "" {
		o.registry = "/usr/bin/docker-registry"
		if p, err := exec.LookPath("docker-registry"); err == nil {
			o.registry = p
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	for _, d := range []string{o.dir, o.stateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	version, err := exec.CommandContext(ctx, o.registry, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w (Debian package: docker-registry)", o.registry, err)
	}
	reg, err := newRegistry(o.registry, o.dir, o.stateDir)
	if err != nil {
		return err
	}
	if err := reg.start(ctx); err != nil {
		return err
	}
	defer reg.stop()

	ln, err := benchenv.Listen(ctx)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	info := map[string]string{
		"OCI_HOST":            reg.host,
		"OCI_CA":              reg.caFile,
		"OCI_DOCKER_CONFIG":   filepath.Dir(reg.dockerConfig),
		"OCI_REGISTRY_CONFIG": reg.dockerConfig,
		"OCI_STATS":           base + "/_stats",
		"OCI_TAGS":            base + "/_tags",
		"OCI_STORAGE":         reg.storage,
		"OCI_LOG":             reg.logFile,
		"OCI_VERSION":         strings.TrimSpace(string(version)),
		"OCI_REGISTRY_PID":    strconv.Itoa(reg.proc.Pid()),
		"OCI_PID":             strconv.Itoa(os.Getpid()),
	}
	if err := benchenv.Write(o.stateDir, "oci.env", info); err != nil {
		_ = ln.Close()
		return err
	}
	fmt.Fprintf(os.Stderr, "benchoci: docker-registry at https://%s, counters at %s\n", reg.host, base)
	err = benchenv.Serve(ctx, ln, reg.handler(), reg.proc.Done())
	if errors.Is(err, benchenv.ErrExited) {
		return fmt.Errorf("docker-registry exited: %s", reg.tail())
	}
	return err
}
