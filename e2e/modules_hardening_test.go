package e2e

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/gitserver"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// trickle passes what it is sent on, after the first after bytes in
// pieces of 8 KiB every 20 ms, counting the bytes.
type trickle struct {
	http.ResponseWriter
	after int64
	sent  *atomic.Int64
	done  <-chan struct{}
}

func (w *trickle) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := len(b)
		if w.sent.Load() >= w.after {
			n = min(n, 8<<10)
			select {
			case <-time.After(20 * time.Millisecond):
			case <-w.done:
				return written, http.ErrAbortHandler
			}
		}
		m, err := w.ResponseWriter.Write(b[:n])
		written += m
		w.sent.Add(int64(m))
		if err != nil {
			return written, err
		}
		w.ResponseWriter.(http.Flusher).Flush()
		b = b[n:]
	}
	return written, nil
}

func (w *trickle) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// TestKilledBuildLeavesNoGit kills `tfmirror build` with SIGKILL while
// git clones a module from a slow server: no git process is left writing
// into the build's work area.
func TestKilledBuildLeavesNoGit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	git := gitserver.Start(t, ca)
	blob := make([]byte, 8<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	git.Commit(t, "big", map[string]string{"main.tf": "# big\n", "blob.bin": string(blob)}, "v1.0.0")

	target, err := url.Parse(git.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = ca.Client().Transport
	var sent atomic.Int64
	slow := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			w = &trickle{ResponseWriter: w, after: 64 << 10, sent: &sent, done: r.Context().Done()}
		}
		proxy.ServeHTTP(w, r)
	}))
	slow.TLS = ca.TLSConfig(t)
	slow.StartTLS()
	t.Cleanup(slow.Close)
	reg.AddModule("acme/big/aws", "1.0.0", "git::"+slow.URL+"/big.git?ref=v1.0.0", false)

	caFile, _, _ := ca.WriteFiles(t, t.TempDir(), "localhost", "127.0.0.1")
	work := t.TempDir()
	// The slow git server is another port of 127.0.0.1: allowed by name.
	writeFile(t, filepath.Join(work, "mirror.hcl"), "module \"acme/big/aws\" { versions = \"1.0.0\" }\n"+moduleHostCLI(reg.ModulesURL)+
		fmt.Sprintf("settings {\n  allowed_location_hosts = [%q]\n}\n", strings.TrimPrefix(slow.URL, "https://")))
	p := startTfmirror(t, work, []string{"SSL_CERT_FILE=" + caFile, "GIT_SSL_CAINFO=" + caFile}, "build")
	p.waitUntil(t, "the clone got going", func() bool { return sent.Load() >= 256<<10 })
	tfmirror := p.cmd.Process.Pid
	if gits := processesIn(t, work, tfmirror); len(gits) == 0 {
		t.Fatal("no git runs in the build's work area while it clones")
	}
	p.kill()
	if _, killed := p.wait(t); !killed {
		t.Fatal("tfmirror was not killed")
	}
	killed := time.Now()
	for {
		left := processesIn(t, work, tfmirror)
		if len(left) == 0 {
			t.Logf("no git left %s after the kill (%d bytes of the pack sent)", time.Since(killed).Round(time.Millisecond), sent.Load())
			return
		}
		if time.Since(killed) > 5*time.Second {
			t.Errorf("5s after tfmirror was killed, processes still run in its work area: %v", left)
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL) // what this test started
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesIn returns the processes but skip (pid and command line)
// whose working directory is dir or below it.
func processesIn(t *testing.T, dir string, skip int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == skip {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue // gone, a zombie, or not ours to see
		}
		if rel, err := filepath.Rel(dir, cwd); err == nil && filepath.IsLocal(rel) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			found[pid] = fmt.Sprintf("%.200s", strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
