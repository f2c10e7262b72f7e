// Command benchs3 is the S3 side of tfmirror's benchmark (bench/run,
// bench/README.md): a real S3-compatible server on 127.0.0.1 behind a proxy
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
// S3_TYPES, S3_SERVER, versitygw's own URL, S3_PID, this proxy's process,
// S3_SERVER_PID, versitygw's), mode 0600, written last.
// It serves until SIGINT or SIGTERM, then stops versitygw.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/bench/internal/benchenv"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
)

// region is the region versitygw answers for.
const region = "us-east-1"

func main() { os.Exit(benchenv.Main("benchs3", run)) }

type options struct {
	versitygw string
	dir       string
	stateDir  string
	buckets   []string
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	var buckets string
	fs := flag.NewFlagSet("benchs3", flag.ContinueOnError)
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
	gw, err := startGateway(ctx, o.versitygw, o.dir)
	if err != nil {
		return err
	}
	defer gw.proc.Stop()

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
	ln, err := benchenv.Listen(ctx)
	if err != nil {
		return err
	}
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
		"S3_SERVER_PID":        strconv.Itoa(gw.proc.Pid()),
	}
	if err := benchenv.Write(o.stateDir, "s3.env", info); err != nil {
		_ = ln.Close()
		return err
	}
	fmt.Fprintf(os.Stderr, "benchs3: versitygw at %s, counting proxy at %s, buckets %s\n", gw.endpoint, base, strings.Join(o.buckets, ", "))
	err = benchenv.Serve(ctx, ln, newProxy(target, client), gw.proc.Done())
	if errors.Is(err, benchenv.ErrExited) {
		return fmt.Errorf("versitygw exited: %s", gw.out.Tail(8<<10))
	}
	return err
}

// gateway is a running versitygw.
type gateway struct {
	accessKey, secretKey string
	endpoint             string // http://127.0.0.1:PORT
	proc                 *serverproc.Process
	out                  *serverproc.Output
}

// startGateway runs versitygw with its POSIX backend in dir, on a free
// port, with throwaway root credentials, and waits until it answers.
func startGateway(ctx context.Context, bin, dir string) (*gateway, error) {
	g := &gateway{
		accessKey: "AKBENCH" + strings.ToUpper(serverproc.RandomHex(7)),
		secretKey: "bench-" + strings.ToUpper(serverproc.RandomHex(16)),
	}
	err := serverproc.OnFreePort(func(addr string) error {
		g.endpoint = "http://" + addr
		g.out = &serverproc.Output{Max: 64 << 10}
		// Not cancelled with ctx: Stop ends the process, gently.
		cmd := exec.CommandContext(context.WithoutCancel(ctx), bin, "--port", addr, "--region", region, "--quiet", "posix", dir)
		// Credentials go through the environment, never the command line;
		// no VGW_* setting of the caller's environment leaks in.
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + os.Getenv("HOME"),
			"ROOT_ACCESS_KEY_ID=" + g.accessKey,
			"ROOT_SECRET_ACCESS_KEY=" + g.secretKey,
		}
		cmd.Stdout = g.out
		cmd.Stderr = g.out
		// Any HTTP answer (an S3 error for the anonymous request) means
		// the server is up.
		var err error
		if g.proc, err = serverproc.Start(ctx, cmd, &http.Client{}, g.endpoint+"/"); err != nil {
			return fmt.Errorf("%w: %s", err, g.out.Tail(8<<10))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("versitygw did not start: %w", err)
	}
	return g, nil
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
