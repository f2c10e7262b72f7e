package layout

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workspaceOwnerEnv, when set, makes the test binary the owner of a
// workspace in the directory it names (holdWorkspace) instead of running
// tests.
const workspaceOwnerEnv = "TFMIRROR_TEST_WORKSPACE_OWNER"

// helperDigest names the partial download the owner process writes.
const helperDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestMain(m *testing.M) {
	if dir := os.Getenv(workspaceOwnerEnv); dir != "" {
		if err := holdWorkspace(dir); err != nil {
			fmt.Fprintln(os.Stderr, "workspace owner:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdWorkspace, run by startOwner in a process of its own, opens a
// workspace, stages a file, writes part of a partial download and holds
// it, prints its staging directory and waits until its standard input
// closes (or it is killed), then closes the workspace.
func holdWorkspace(dir string) error {
	w, err := OpenWorkspace(dir)
	if err != nil {
		return err
	}
	f, err := w.CreateStaged("a.zip")
	if err != nil {
		return err
	}
	_, err = f.WriteString("staged by the owner")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	p, _, ok, err := w.OpenPartial(helperDigest)
	if err != nil || !ok {
		return fmt.Errorf("OpenPartial: ok %v, %w", ok, err)
	}
	_, err = p.WriteString("first half")
	_ = p.Close() // the partial download stays held until ReleasePartial
	if err != nil {
		return err
	}
	if _, err := os.Stdout.WriteString("staging " + w.StagingDir() + "\n"); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	w.ReleasePartial(helperDigest)
	return w.Close()
}

// owner is a process that holds a workspace.
type owner struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	staging string
}

// startOwner starts a process that opens a workspace in dir and holds it
// (holdWorkspace), and waits until it has.
func startOwner(t *testing.T, dir string) *owner {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workspaceOwnerEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &owner{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if staging, ok := strings.CutPrefix(sc.Text(), "staging "); ok {
				lines <- staging
			}
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case staging, ok := <-lines:
		if !ok {
			t.Fatal("the owner process ended before it held its workspace")
		}
		o.staging = staging
	case <-time.After(30 * time.Second):
		t.Fatal("the owner process did not hold its workspace within 30s")
	}
	return o
}

// kill ends the owner without letting it clean up, as SIGKILL or a crash
// would.
func (o *owner) kill(t *testing.T) {
	t.Helper()
	if err := o.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = o.cmd.Wait()
}

// TestWorkspaceRunsArePrivate: workspaces opened in one directory at the
// same time, by another process or in this one, never remove each
// other's staging area, nor share a partial download while it is held;
// what a killed process left is removed by the next workspace opened
// there, and its partial download is resumed.
func TestWorkspaceRunsArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	other := startOwner(t, dir)
	otherStaged := filepath.Join(other.staging, "a.zip")
	if matches, _ := filepath.Glob(otherStaged + "-*"); len(matches) != 1 {
		t.Fatalf("the owner's staged file: %v", matches)
	}

	first, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if first.StagingDir() == other.staging {
		t.Fatalf("two processes were given one staging area, %s", first.StagingDir())
	}
	if matches, _ := filepath.Glob(otherStaged + "-*"); len(matches) != 1 {
		t.Errorf("opening a workspace removed a live process's staged file")
	}
	if f, _, ok, err := first.OpenPartial(helperDigest); err != nil || ok {
		if f != nil {
			_ = f.Close()
		}
		t.Errorf("OpenPartial of a download another live process holds: ok %v, %v; want ok false", ok, err)
	}
	staged, err := first.CreateStaged("b.zip")
	if err != nil {
		t.Fatal(err)
	}
	_ = staged.Close()

	// A second workspace in this process: private too.
	second, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second.StagingDir() == first.StagingDir() {
		t.Fatalf("two workspaces were given one staging area, %s", first.StagingDir())
	}
	if _, err := os.Stat(staged.Name()); err != nil {
		t.Errorf("opening a workspace removed a live workspace's staged file: %v", err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staged.Name()); err != nil {
		t.Errorf("closing a workspace removed another's staged file: %v", err)
	}

	other.kill(t)
	third, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := os.Stat(filepath.Dir(other.staging)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed process's run is still there: %v", err)
	}
	if _, err := os.Stat(staged.Name()); err != nil {
		t.Errorf("removing a dead run removed a live workspace's staged file: %v", err)
	}
	f, size, ok, err := third.OpenPartial(helperDigest)
	if err != nil || !ok || size != int64(len("first half")) {
		t.Fatalf("OpenPartial of the killed process's download: size %d, ok %v, %v; want it resumed at %d bytes", size, ok, err, len("first half"))
	}
	_ = f.Close()
	third.ReleasePartial(helperDigest)

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(listDir(t, dir), " "); got != partialDirName {
		t.Errorf("left in the workspace directory once every workspace closed: %s; want only %s", got, partialDirName)
	}
}

// TestWorkspaceOwnerEndsCleanly: a process that closes its workspace
// leaves nothing of its run, and its partial download for the next.
func TestWorkspaceOwnerEndsCleanly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	o := startOwner(t, dir)
	if err := o.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.cmd.Wait(); err != nil {
		t.Fatalf("the owner process: %v", err)
	}
	if got := strings.Join(listDir(t, dir), " "); got != partialDirName {
		t.Errorf("left in the workspace directory: %s; want only %s", got, partialDirName)
	}
}

// TestWorkspaceOldPartials: a partial download untouched for more than a
// week is removed by the next workspace unless a live process holds it;
// so is a lock file whose download is gone and nobody holds.
func TestWorkspaceOldPartials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	o := startOwner(t, dir)
	partial := filepath.Join(dir, partialDirName)
	unheld := strings.Repeat("ab", 32)
	for _, name := range []string{unheld, unheld + lockSuffix, "gone" + lockSuffix} {
		if err := os.WriteFile(filepath.Join(partial, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-partialMaxAge - time.Hour)
	for _, name := range []string{helperDigest, unheld} {
		if err := os.Chtimes(filepath.Join(partial, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	w, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, want := strings.Join(listDir(t, partial), " "), helperDigest+" "+helperDigest+lockSuffix; got != want {
		t.Errorf("partial downloads after OpenWorkspace: %s; want the held one only, %s", got, want)
	}
	o.kill(t)
}
