// Command benchs3 is the S3 side of tfmirror's benchmark (bench/run,
// BENCHMARKS.md): a real S3-compatible server on 127.0.0.1 behind a proxy
// that counts the requests its clients make.
//
// It starts versitygw (--versitygw: the binary scripts/test builds into the
// tools cache) with its POSIX backend in --dir, on a free port of 127.0.0.1,
// with throwaway root credentials; creates --buckets; and listens on another
// free port of 127.0.0.1 as a plain-HTTP reverse proxy to it. The proxy
// forwards every request unchanged, Host header included, so the clients'
// SigV4 signatures, made for the proxy's address, hold; it counts each
// request by operation, and the request body bytes.
//
// Besides S3, the proxy answers two paths that no bucket can have (bucket
// names have no "_"); neither is counted:
//
//	GET /_stats                  the counters so far, KEY=VALUE lines (see stats)
//	GET /_types?bucket=B&prefix=P
//	                             what the server stores under B/P (keys under
//	                             a .tfmirror/ directory left out), read with
//	                             HEAD straight from versitygw, KEY=VALUE lines
//	                             per kind of file (see types)
//
// Once ready it writes --state-dir/s3.env (KEY=VALUE lines: S3_ENDPOINT, the
// proxy's URL, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_REGION, S3_STATS,
// S3_TYPES, S3_SERVER, versitygw's own URL, S3_PID), mode 0600, written last.
// It serves until SIGINT or SIGTERM, then stops versitygw.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/bench/internal/benchenv"
)

// region is the region versitygw answers for.
const region = "us-east-1"

// startTimeout bounds how long versitygw may take to answer.
const startTimeout = 30 * time.Second

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "benchs3: %v\n", err)
		cancel()
		os.Exit(1)
	}
}

type options struct {
	versitygw string
	dir       string
	stateDir  string
	buckets   []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	var buckets string
	fs := flag.NewFlagSet("benchs3", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.versitygw, "versitygw", "", "the versitygw binary (required)")
	fs.StringVar(&o.dir, "dir", "", "directory of versitygw's POSIX backend, one subdirectory per bucket (required)")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for s3.env (required)")
	fs.StringVar(&buckets, "buckets", "bench", "comma-separated buckets to create")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.versitygw == "" || o.dir == "" || o.stateDir == "" {
		return nil, errors.New("-versitygw, -dir and -state-dir are required")
	}
	for b := range strings.SplitSeq(buckets, ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.buckets = append(o.buckets, b)
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	for _, d := range []string{o.dir, o.stateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	gw := &gateway{
		bin:       o.versitygw,
		dir:       o.dir,
		accessKey: "AKBENCH" + randomHex(7),
		secretKey: "bench-" + randomHex(16),
		log:       &syncBuffer{},
	}
	if err := gw.start(ctx); err != nil {
		return err
	}
	defer gw.stop()

	client := gw.client()
	for _, b := range o.buckets {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := client.CreateBucket(cctx, &s3.CreateBucketInput{Bucket: aws.String(b)})
		cancel()
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}

	target, err := url.Parse(gw.endpoint)
	if err != nil {
		return err
	}
	p := newProxy(target, client)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	base := "http://" + ln.Addr().String()
	info := map[string]string{
		"S3_ENDPOINT":          base,
		"S3_STATS":             base + "/_stats",
		"S3_TYPES":             base + "/_types",
		"S3_SERVER":            gw.endpoint,
		"S3_ACCESS_KEY_ID":     gw.accessKey,
		"S3_SECRET_ACCESS_KEY": gw.secretKey,
		"S3_REGION":            region,
		"S3_PID":               strconv.Itoa(os.Getpid()),
	}
	if err := benchenv.Write(o.stateDir, "s3.env", info); err != nil {
		_ = ln.Close()
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "benchs3: versitygw at %s, counting proxy at %s, buckets %s\n", gw.endpoint, base, strings.Join(o.buckets, ", "))
	select {
	case err := <-errc:
		return err
	case <-gw.done:
		_ = srv.Close()
		return fmt.Errorf("versitygw exited: %s", strings.TrimSpace(gw.log.String()))
	case <-ctx.Done():
	}
	_ = srv.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// gateway is a running versitygw.
type gateway struct {
	bin, dir             string
	accessKey, secretKey string
	endpoint             string // http://127.0.0.1:PORT
	cmd                  *exec.Cmd
	log                  *syncBuffer
	done                 chan struct{} // closed when the process has exited
}

// start runs versitygw on a free port and waits until it answers. The free
// port is found by listening and closing, so another process may take it
// first: it tries a few.
func (g *gateway) start(ctx context.Context) error {
	var err error
	for range 3 {
		var port int
		if port, err = freePort(ctx); err != nil {
			return err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		g.endpoint = "http://" + addr
		if err = g.run(ctx, addr); err == nil {
			return nil
		}
	}
	return fmt.Errorf("versitygw did not start: %w", err)
}

func (g *gateway) run(ctx context.Context, addr string) error {
	g.log.Reset()
	// Not cancelled with ctx: stop ends the process, gently.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), g.bin, "--port", addr, "--region", region, "--quiet", "posix", g.dir)
	// Credentials go through the environment, never the command line; no
	// VGW_* setting of the caller's environment leaks in.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"ROOT_ACCESS_KEY_ID=" + g.accessKey,
		"ROOT_SECRET_ACCESS_KEY=" + g.secretKey,
	}
	cmd.Stdout = g.log
	cmd.Stderr = g.log
	// If benchs3 dies without stopping it, the kernel does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return err
	}
	g.cmd = cmd
	g.done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(g.done)
	}()

	probe := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-g.done:
			return fmt.Errorf("exited early: %s", strings.TrimSpace(g.log.String()))
		case <-ctx.Done():
			g.stop()
			return ctx.Err()
		default:
		}
		// Any HTTP answer (an S3 error for the anonymous request) means the
		// server is up.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.endpoint+"/", nil)
		if err != nil {
			g.stop()
			return err
		}
		resp, err := probe.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			g.stop()
			return fmt.Errorf("no answer on %s after %s: %w", addr, startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends versitygw: SIGTERM, then SIGKILL if it lingers.
func (g *gateway) stop() {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(5 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

// client is an SDK client of versitygw itself (not through the proxy, so
// uncounted), path-style, with checksums only where required.
func (g *gateway) client() *s3.Client {
	return s3.New(s3.Options{
		Region:                     region,
		Credentials:                credentials.NewStaticCredentialsProvider(g.accessKey, g.secretKey, ""),
		BaseEndpoint:               aws.String(g.endpoint),
		UsePathStyle:               true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return strings.ToUpper(hex.EncodeToString(b))
}

// syncBuffer collects a process's output for an error message.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) < 64<<10 {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = nil
}
