package cli

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	appbuild "github.com/tfmirror/tfmirror/internal/app/build"
	applock "github.com/tfmirror/tfmirror/internal/app/lock"
	appprune "github.com/tfmirror/tfmirror/internal/app/prune"
	appverify "github.com/tfmirror/tfmirror/internal/app/verify"
	"github.com/tfmirror/tfmirror/internal/settings"
)

// runWith runs the command line with commands that only record their
// options: how flags become options, without running anything.
func runWith(t *testing.T, run commands, args ...string) int {
	t.Helper()
	var out bytes.Buffer
	return Main(context.Background(), Env{Args: args, Stdout: &out, Stderr: &out, Environ: []string{"HOME=/home/u"}, run: &run})
}

func TestFlagsBecomeBuildOptions(t *testing.T) {
	var got appbuild.Options
	run := commands{build: func(_ context.Context, o appbuild.Options) (*appbuild.Report, error) { got = o; return nil, nil }}
	code := runWith(t, run, "build", "live/a", "--config", "m.hcl", "--out", "s3://b/p/", "--out", "site",
		"--platform", "linux_amd64", "--parallel", "3", "--retries", "7", "--require-signatures", "--lock-timeout", "1m",
		"--layout", "packed", "--from", "https://mirror.example/", "--shard", "2/4", "--dry-run", "--no-modules")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	f := got.Flags
	if f.Config != "m.hcl" || !f.ConfigSet || f.Parallel != 3 || f.Net.Retries != 7 || !f.NetSet[settings.FlagRetries] || f.NetSet[settings.FlagStallTimeout] ||
		!f.RequireSignatures || f.LockTimeout != time.Minute {
		t.Errorf("flags: %+v", f)
	}
	if !slices.Equal(got.Out, []string{"s3://b/p/", "site"}) || !slices.Equal(got.Dirs, []string{"live/a"}) || !slices.Equal(got.Platforms, []string{"linux_amd64"}) ||
		got.Layout != "packed" || got.From != "https://mirror.example/" || got.Shard != "2/4" || !got.DryRun || !got.NoModules {
		t.Errorf("options: %+v", got)
	}
	if got.Process.UserAgent == "" || !slices.Contains(got.Process.Environ, "HOME=/home/u") {
		t.Errorf("process: %+v", got.Process)
	}

	// Without --out, the build takes the manifest's out list: no default
	// stands in for it.
	runWith(t, run, "build")
	if got.Out != nil || got.Flags.ConfigSet || got.Flags.Config != "mirror.hcl" || got.Flags.NetSet[settings.FlagRetries] {
		t.Errorf("defaults: out %q, flags %+v", got.Out, got.Flags)
	}
}

func TestFlagsBecomeOptionsOfEveryReader(t *testing.T) {
	var lock applock.Options
	var verify appverify.Options
	var prune appprune.Options
	run := commands{
		lock:   func(_ context.Context, o applock.Options) (*applock.Report, error) { lock = o; return nil, nil },
		verify: func(_ context.Context, o appverify.Options) (*appverify.Report, error) { verify = o; return nil, nil },
		prune:  func(_ context.Context, o appprune.Options) (*appprune.Report, error) { prune = o; return nil, nil },
	}
	runWith(t, run, "lock", "a", "b", "--mirror", "https://m.example/", "--config", "m.hcl", "--platform", "darwin_arm64", "--stall-timeout", "5s",
		"--max-archive-bytes", "1GiB", "--speed-limit", "10kB")
	if lock.Mirror != "https://m.example/" || !slices.Equal(lock.Dirs, []string{"a", "b"}) || !lock.Flags.ConfigSet || !lock.Flags.NetSet[settings.FlagStallTimeout] || lock.Flags.Net.StallTimeout != 5*time.Second {
		t.Errorf("lock options: %+v", lock)
	}
	if lock.Flags.Net.MaxBodyBytes != 1<<30 || lock.Flags.Net.SpeedLimit != 10_000 || !lock.Flags.NetSet[settings.FlagMaxArchiveBytes] {
		t.Errorf("sizes with units: %+v", lock.Flags.Net)
	}
	if code := runWith(t, run, "lock", "--mirror", "site", "--max-archive-bytes", "1 XB"); code != ExitUsage {
		t.Errorf("a size with an unknown unit: exit %d, want %d", code, ExitUsage)
	}
	runWith(t, run, "verify", "s3://b/p/", "--require-signatures")
	if verify.Mirror != "s3://b/p/" || !verify.Flags.RequireSignatures || verify.Flags.ConfigSet {
		t.Errorf("verify options: %+v", verify)
	}
	runWith(t, run, "prune", "--out", "site", "--grace", "0", "--max-deletions", "3", "--dry-run")
	if prune.Out != "site" || prune.Grace != 0 || prune.MaxDeletions != 3 || !prune.DryRun {
		t.Errorf("prune options: %+v", prune)
	}
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	code := Main(context.Background(), Env{Args: []string{"--version"}, Stdout: &out, Stderr: &out, Version: "1.2.3", Commit: "abc"})
	if code != ExitOK || out.String() != "tfmirror 1.2.3 (commit abc)\n" {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
}
