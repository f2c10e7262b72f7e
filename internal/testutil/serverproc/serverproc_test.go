package serverproc

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play the server: with SERVERPROC_HELPER
// set it serves HTTP on its argument ("serve") until SIGTERM, or fails at
// once ("exit").
func TestMain(m *testing.M) {
	switch os.Getenv("SERVERPROC_HELPER") {
	case "serve":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		srv := &http.Server{Addr: os.Args[1], ReadHeaderTimeout: time.Minute}
		go func() { _ = srv.ListenAndServe() }()
		<-term
		os.Exit(0)
	case "exit":
		fmt.Fprintln(os.Stderr, "boom: cannot start")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func helper(t *testing.T, mode, addr string, out *Output) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], addr)
	cmd.Env = append(os.Environ(), "SERVERPROC_HELPER="+mode)
	cmd.Stdout, cmd.Stderr = out, out
	return cmd
}

func TestStartAndStop(t *testing.T) {
	var p *Process
	err := OnFreePort(func(addr string) error {
		var err error
		p, err = Start(t.Context(), helper(t, "serve", addr, &Output{}), &http.Client{}, "http://"+addr+"/")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Pid() <= 0 {
		t.Errorf("Pid = %d", p.Pid())
	}
	select {
	case <-p.Done():
		t.Fatal("Done before Stop")
	default:
	}
	p.Stop()
	<-p.Done()
	p.Stop() // again: returns at once
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0 (stopped gently)", code)
	}
}

func TestStartExitsEarly(t *testing.T) {
	out := &Output{}
	_, err := Start(t.Context(), helper(t, "exit", "127.0.0.1:1", out), &http.Client{}, "http://127.0.0.1:1/")
	if err == nil || !strings.Contains(err.Error(), "exited before answering: exit status 3") {
		t.Errorf("Start: %v", err)
	}
	if got := out.Tail(100); got != "boom: cannot start" {
		t.Errorf("output %q", got)
	}
}

func TestOnFreePortTriesThrice(t *testing.T) {
	var addrs []string
	errBusy := errors.New("busy")
	err := OnFreePort(func(addr string) error {
		addrs = append(addrs, addr)
		if len(addrs) < 3 {
			return errBusy
		}
		return nil
	})
	if err != nil || len(addrs) != 3 || !strings.HasPrefix(addrs[0], "127.0.0.1:") {
		t.Errorf("OnFreePort: %v after %q", err, addrs)
	}
	addrs = nil
	if err := OnFreePort(func(addr string) error { addrs = append(addrs, addr); return errBusy }); !errors.Is(err, errBusy) || len(addrs) != 3 {
		t.Errorf("OnFreePort always failing: %v after %d calls", err, len(addrs))
	}
}

func TestOutput(t *testing.T) {
	o := &Output{Max: 8}
	for _, s := range []string{"0123", "456789", "ab \n"} {
		if n, err := o.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if got := o.String(); got != "6789ab \n" {
		t.Errorf("String = %q, want the last 8 bytes", got)
	}
	if got := o.Tail(5); got != "9ab" {
		t.Errorf("Tail(5) = %q", got)
	}
	all := &Output{}
	_, _ = all.Write([]byte(strings.Repeat("x", 1<<16)))
	if len(all.String()) != 1<<16 {
		t.Error("the zero Output did not keep everything")
	}
}

func TestRandomHex(t *testing.T) {
	a, b := RandomHex(8), RandomHex(8)
	if len(a) != 16 || a == b || strings.ToLower(a) != a {
		t.Errorf("RandomHex: %q, %q", a, b)
	}
}

func TestRequired(t *testing.T) {
	for _, c := range []struct {
		ci, e2e string
		want    bool
	}{{"", "", false}, {"true", "", true}, {"1", "", true}, {"false", "", false}, {"", "1", true}, {"", "0", false}} {
		t.Setenv("CI", c.ci)
		t.Setenv("TFMIRROR_E2E", c.e2e)
		if got := Required(); got != c.want {
			t.Errorf("CI=%q TFMIRROR_E2E=%q: Required = %v", c.ci, c.e2e, got)
		}
	}
}
