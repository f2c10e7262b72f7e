package s3store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	gonet "net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/logging"

	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// Config is what New needs besides the URI: what library code may not
// read itself (the environment) and the store's policies.
//
// The client is configured the standard AWS way, through
// config.LoadDefaultConfig, with explicit options derived from Environ,
// so that a setting present in Environ wins over whatever the SDK would
// find itself in the process environment (the CLI runs in-process in
// tests, with an environment of its own). A setting absent from Environ
// falls back to the SDK's own resolution (the process environment, the
// shared configuration files). The settings read from Environ:
//
//   - credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
//     AWS_SESSION_TOKEN; else a web identity (AWS_WEB_IDENTITY_TOKEN_FILE,
//     AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME); else the profile AWS_PROFILE
//     (or AWS_DEFAULT_PROFILE) of AWS_CONFIG_FILE and
//     AWS_SHARED_CREDENTIALS_FILE (default $HOME/.aws/config and
//     $HOME/.aws/credentials); else the rest of the SDK's chain (SSO,
//     container and EC2 instance metadata; AWS_EC2_METADATA_DISABLED=true
//     turns the latter off);
//   - region: AWS_REGION, else AWS_DEFAULT_REGION, else the profile's,
//     else us-east-1;
//   - endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, for
//     S3-compatible stores; http:// is allowed, and a custom endpoint
//     (from Environ or the SDK's own resolution) switches to path-style
//     addressing (http://host/bucket/key);
//   - trusted CAs: CAFile, else AWS_CA_BUNDLE, else SSL_CERT_FILE; the file
//     replaces the system certificate store;
//   - proxies: HTTPS_PROXY, HTTP_PROXY, NO_PROXY (either case);
//   - checksums: AWS_REQUEST_CHECKSUM_CALCULATION and
//     AWS_RESPONSE_CHECKSUM_VALIDATION, "when_required" by default (not
//     the SDK's "when_supported"), which every S3-compatible store
//     accepts.
//
// Retries follow Config.Net, whatever AWS_MAX_ATTEMPTS says: at most
// Net.Retries retries of throttling, 5xx answers and connection errors,
// waiting Net's backoff (or the answer's Retry-After) and telling each to
// the context's notify.Handler; never of a refused request (401, 403:
// wrong credentials, no permission).
type Config struct {
	// Environ is the process environment as the CLI was given it,
	// "KEY=value" strings; for a duplicated key the last one counts.
	Environ []string
	// HTTPClient, if set, sends every request; its transport then decides
	// TLS, proxies and timeouts, and CAFile, AWS_CA_BUNDLE, SSL_CERT_FILE
	// and the proxy variables do not apply. Nil: a client with a 10s
	// connect timeout configured as described above.
	HTTPClient *http.Client
	// CAFile is a PEM file of the certificate authorities to trust for
	// the endpoint instead of the system store. Exclusive with
	// HTTPClient.
	CAFile string
	// ImmutableCacheControl is the Cache-Control of files that never
	// change once published: the archives (.zip), SHA256SUMS and its
	// signature (.sig). Empty: DefaultImmutableCacheControl;
	// NoCacheControl stores none.
	ImmutableCacheControl string
	// DocumentCacheControl is the Cache-Control of the JSON documents
	// (index.json, <version>.json, ...), which change with every
	// publication. Empty: DefaultDocumentCacheControl; NoCacheControl
	// stores none.
	DocumentCacheControl string
	// LockLease is how long the lock object of a writer that stopped
	// refreshing it is respected before another writer may take it over.
	// Zero: DefaultLockLease.
	LockLease time.Duration
	// Net bounds the time of every request as it bounds downloads:
	// ConnectTimeout the connection and the TLS handshake (0: 10s),
	// HeaderTimeout the wait for an answer's headers, and StallTimeout and
	// SpeedLimit over SpeedTime every answer's body, an object's content
	// included (httpx.Watch): a store that stops sending, or trickles,
	// fails the read that waits for it. Zero fields are no limit (but the
	// connect timeout's default); the connect and header timeouts apply
	// to the default client only. Retries, MinBackoff and MaxBackoff bound
	// the retries of every request (zero Retries: one attempt).
	// MaxBodyBytes is not used: every read has its own size limit.
	Net httpx.Policy
	// MaxListObjects and MaxListPages bound one listing (of the tree, of
	// the writers' leases, of interrupted uploads): past either it fails
	// with ErrListTooLong. Zero: DefaultMaxListObjects and
	// DefaultMaxListPages.
	MaxListObjects, MaxListPages int
	// MaxListPageBytes bounds the answer to one listing request: a longer
	// one fails with ErrAnswerTooLarge. Zero: DefaultMaxListPageBytes.
	MaxListPageBytes int64
}

const (
	// DefaultImmutableCacheControl lets clients and CDNs keep archives,
	// SHA256SUMS and signatures for a year.
	DefaultImmutableCacheControl = "public, max-age=31536000, immutable"
	// DefaultDocumentCacheControl keeps JSON documents for a minute, so
	// clients see a publication soon.
	DefaultDocumentCacheControl = "public, max-age=60"
	// NoCacheControl as a Cache-Control setting stores no Cache-Control.
	NoCacheControl = "none"
	// EnvImmutableCacheControl and EnvDocumentCacheControl name the
	// environment variables that set ImmutableCacheControl and
	// DocumentCacheControl when they are empty, so every command that
	// writes a bucket honours one setting.
	EnvImmutableCacheControl = "TFMIRROR_S3_IMMUTABLE_CACHE_CONTROL"
	EnvDocumentCacheControl  = "TFMIRROR_S3_DOCUMENT_CACHE_CONTROL"
	// DefaultLockLease is the default of Config.LockLease. A live holder
	// rewrites its lock every quarter of the lease, so the lease only
	// decides how soon the lock of a killed build is taken over: within
	// the default --lock-timeout of the next run.
	DefaultLockLease = 2 * time.Minute
	// DefaultRegion is the region when nothing names one; S3-compatible
	// stores generally accept it.
	DefaultRegion = "us-east-1"
)

const (
	// dialTimeout bounds a connection attempt of the default HTTP client.
	dialTimeout = 10 * time.Second
)

// clientConfig is what New builds its client from.
type clientConfig struct {
	aws    aws.Config
	s3Opts []func(*s3.Options)
}

// loadConfig makes the SDK configuration from c. Error messages name
// variables, never their values: no credential appears in them.
func loadConfig(ctx context.Context, c Config) (clientConfig, error) {
	env := environ.Parse(c.Environ)
	var opts []func(*config.LoadOptions) error

	if r := env.First("AWS_REGION", "AWS_DEFAULT_REGION"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	if p := env.First("AWS_PROFILE", "AWS_DEFAULT_PROFILE"); p != "" {
		opts = append(opts, config.WithSharedConfigProfile(p))
	}
	home := env["HOME"]
	if f := env["AWS_CONFIG_FILE"]; f != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{f}))
	} else if home != "" {
		opts = append(opts, config.WithSharedConfigFiles([]string{filepath.Join(home, ".aws", "config")}))
	}
	if f := env["AWS_SHARED_CREDENTIALS_FILE"]; f != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{f}))
	} else if home != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{filepath.Join(home, ".aws", "credentials")}))
	}

	id, secret := env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
	staticKeys := id != "" && secret != ""
	switch {
	case staticKeys:
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, secret, env["AWS_SESSION_TOKEN"])))
	case id != "":
		return clientConfig{}, errors.New("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
	case secret != "":
		return clientConfig{}, errors.New("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")
	}
	if strings.EqualFold(env["AWS_EC2_METADATA_DISABLED"], "true") {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}

	reqSum, err := requestChecksum(env["AWS_REQUEST_CHECKSUM_CALCULATION"])
	if err != nil {
		return clientConfig{}, err
	}
	respSum, err := responseChecksum(env["AWS_RESPONSE_CHECKSUM_VALIDATION"])
	if err != nil {
		return clientConfig{}, err
	}
	opts = append(opts,
		config.WithRequestChecksumCalculation(reqSum),
		config.WithResponseChecksumValidation(respSum),
		config.WithRetryer(newRetryer(c.Net)),
		// The SDK's warnings (a body it could not drain, say) would go to
		// the process's stderr; what matters reaches the caller as errors.
		config.WithLogger(logging.Nop{}),
	)

	// A client of the caller's is set once the configuration is loaded:
	// the SDK would try to add a CA bundle of the process environment to
	// it, which it cannot do to any client but its own.
	if c.HTTPClient == nil {
		client, pem, err := defaultHTTPClient(c, env, c.Net)
		if err != nil {
			return clientConfig{}, err
		}
		opts = append(opts, config.WithHTTPClient(client))
		if pem != nil {
			// So that the SDK does not add a bundle of the process
			// environment to the one of Environ.
			opts = append(opts, config.WithCustomCABundle(bytes.NewReader(pem)))
		}
	} else if c.CAFile != "" {
		return clientConfig{}, errors.New("s3store: Config.CAFile and Config.HTTPClient are exclusive: give the client's transport the CAs")
	}

	endpoint := env.First("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	if endpoint != "" {
		if err := checkEndpoint(endpoint); err != nil {
			return clientConfig{}, err
		}
	}
	if g := env["AWS_ENDPOINT_URL"]; g != "" {
		// The global endpoint applies to every service (STS included), as
		// in the SDK.
		opts = append(opts, config.WithBaseEndpoint(g))
	}

	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return clientConfig{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if c.HTTPClient != nil {
		cfg.HTTPClient = c.HTTPClient
	}
	cfg.APIOptions = append(cfg.APIOptions, countAttempts)
	// Bounded once the SDK has configured its client (above): it only
	// configures a client of its own type.
	cfg.HTTPClient = boundedClient{next: cfg.HTTPClient, net: c.Net, maxPage: orDefault(c.MaxListPageBytes, DefaultMaxListPageBytes)}
	if tokenFile, role := env["AWS_WEB_IDENTITY_TOKEN_FILE"], env["AWS_ROLE_ARN"]; !staticKeys && tokenFile != "" && role != "" {
		session := env["AWS_ROLE_SESSION_NAME"]
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewWebIdentityRoleProvider(
			sts.NewFromConfig(cfg), role, stscreds.IdentityTokenFile(tokenFile),
			func(o *stscreds.WebIdentityRoleOptions) {
				if session != "" {
					o.RoleSessionName = session
				}
			}))
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	s3Opt := func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		// Any custom endpoint (S3-compatible stores rarely have wildcard
		// DNS names for virtual-hosted buckets) is addressed path-style.
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
		o.APIOptions = append(o.APIOptions, excerptErrors)
	}
	return clientConfig{aws: cfg, s3Opts: []func(*s3.Options){s3Opt}}, nil
}

// checkEndpoint refuses an endpoint that is not an http(s) URL of a host,
// without repeating it (it could hold a password).
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return errors.New("the S3 endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the S3 endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) must start with https:// or http://")
	case u.Host == "":
		return errors.New("the S3 endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) names no host")
	case u.User != nil:
		return errors.New("the S3 endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) must not hold credentials")
	}
	return nil
}

func requestChecksum(v string) (aws.RequestChecksumCalculation, error) {
	switch strings.ToLower(v) {
	case "", "when_required":
		return aws.RequestChecksumCalculationWhenRequired, nil
	case "when_supported":
		return aws.RequestChecksumCalculationWhenSupported, nil
	}
	return 0, fmt.Errorf("AWS_REQUEST_CHECKSUM_CALCULATION=%q: want when_required or when_supported", v)
}

func responseChecksum(v string) (aws.ResponseChecksumValidation, error) {
	switch strings.ToLower(v) {
	case "", "when_required":
		return aws.ResponseChecksumValidationWhenRequired, nil
	case "when_supported":
		return aws.ResponseChecksumValidationWhenSupported, nil
	}
	return 0, fmt.Errorf("AWS_RESPONSE_CHECKSUM_VALIDATION=%q: want when_required or when_supported", v)
}

// defaultHTTPClient returns the SDK's client with bounded connect, TLS
// handshake and header times (net's, the connect timeout dialTimeout by
// default) and the CA bundle and proxies of c and env, and the CA
// bundle's PEM if there is one.
func defaultHTTPClient(c Config, env environ.Env, net httpx.Policy) (*awshttp.BuildableClient, []byte, error) {
	caFile, source := c.CAFile, "CA file"
	if caFile == "" {
		caFile, source = env["AWS_CA_BUNDLE"], "AWS_CA_BUNDLE"
	}
	if caFile == "" {
		caFile, source = env["SSL_CERT_FILE"], "SSL_CERT_FILE"
	}
	var (
		pool *x509.CertPool
		pem  []byte
	)
	if caFile != "" {
		var err error
		pem, err = os.ReadFile(caFile)
		if err != nil {
			return nil, nil, fmt.Errorf("read the %s: %w", source, err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("the %s %s holds no PEM certificate", source, caFile)
		}
	}
	proxy := env.Proxy()
	connect := net.ConnectTimeout
	if connect <= 0 {
		connect = dialTimeout
	}
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *gonet.Dialer) { d.Timeout = connect }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.TLSHandshakeTimeout = connect
			tr.ResponseHeaderTimeout = net.HeaderTimeout
			tr.Proxy = proxy
			if pool != nil {
				if tr.TLSClientConfig == nil {
					tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
				}
				tr.TLSClientConfig.RootCAs = pool
			}
		}), pem, nil
}
