// Package serverproc runs a server program as a child process: it starts
// it on a free port of 127.0.0.1, waits until it answers HTTP, collects its
// output and stops it (SIGTERM, then SIGKILL). The test helpers s3test and
// registrytest and the benchmark's helper programs (bench/cmd/benchs3,
// bench/cmd/benchoci) share it.
//
// Unlike the other internal/testutil packages, programs may import it as
// well as tests: it imports no testing package and nothing of tfmirror
// but internal/testutil/testnet.
package serverproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/testnet"
)

// StartTimeout bounds how long Start waits for the server to answer.
const StartTimeout = 30 * time.Second

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Process is a started server program.
type Process struct {
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	stopOnce sync.Once
}

// Start starts cmd, which the kernel kills when this process dies (on
// Linux), and waits until url answers through client: any HTTP answer,
// whatever its status, means the server is up. If the process exits first,
// ctx ends or StartTimeout passes, it stops the process and fails; the
// error does not quote the process's output, which cmd's Stdout and Stderr
// collect.
func Start(ctx context.Context, cmd *exec.Cmd, client *http.Client, url string) (*Process, error) {
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	for {
		err := probe(ctx, client, url)
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("exited before answering: %s", cmd.ProcessState)
		case <-ctx.Done():
			p.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("no answer at %s after %s: %w", url, StartTimeout, err)
			}
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probe makes one request to url, for at most 2 seconds.
func probe(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends the process: SIGTERM, then SIGKILL if it is still there after
// 5 seconds. It returns once the process has exited; calling it again, or
// concurrently, waits for the same.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
		}
	})
	<-p.done
}

// OnFreePort calls start with "127.0.0.1:PORT", PORT a port that was free
// a moment ago, until start succeeds, at most three times: the port is
// found by listening and closing, so another process may take it before the
// server does. It returns start's last error.
func OnFreePort(start func(addr string) error) error {
	var err error
	for range 3 {
		port, perr := testnet.FreePort()
		if perr != nil {
			return perr
		}
		if err = start(fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return nil
		}
	}
	return err
}

// Output collects a process's output (an io.Writer for its Stdout and
// Stderr); safe for concurrent use. The zero value keeps everything.
type Output struct {
	// Max > 0 keeps only the last Max bytes: enough to tell why a
	// process failed.
	Max int

	mu  sync.Mutex
	buf []byte
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	if o.Max > 0 && len(o.buf) > o.Max {
		o.buf = o.buf[len(o.buf)-o.Max:]
	}
	return len(p), nil
}

// String is the output kept.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf)
}

// Tail is at most the last n bytes kept, without surrounding white space:
// for an error message.
func (o *Output) Tail(n int) string {
	s := o.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

// RandomHex is n random bytes in lowercase hexadecimal: for throwaway
// credentials.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// Required reports whether a test must fail, not skip, when a server
// program it needs is missing: on CI (CI=true or CI=1) and under
// scripts/test (TFMIRROR_E2E=1), which both install every one.
func Required() bool {
	ci := getenv("CI")
	return ci == "true" || ci == "1" || getenv("TFMIRROR_E2E") == "1"
}

// getenv reads the environment of the test or helper program: test
// support, not library code.
func getenv(key string) string {
	return os.Getenv(key) //nolint:forbidigo // test support reads its own environment
}
