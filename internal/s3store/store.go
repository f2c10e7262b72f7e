package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithymw "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/layout"
)

// Store is a mirror tree under a prefix of an S3 bucket.
//
// Every Put is one PutObject, or one multipart upload completed with
// CompleteMultipartUpload, and S3 makes an object visible atomically when
// either request succeeds: a reader sees the old object or the new one,
// never a part of one, and a failed or interrupted upload leaves the old
// object. The request returns once S3 has stored the object durably, so a
// Put issued after another becomes visible after it, as the layout.Store
// contract requires; Puts are never batched or reordered. An interrupted
// multipart upload leaves invisible parts behind, which a later writer
// aborts (see abortUploads): the next exclusive Lock, or the first write
// of a publisher once the upload is staleUploadAge old.
//
// A Store is safe for concurrent use.
type Store struct {
	client *s3.Client
	bucket string
	prefix string // "" or "dir/.../" (no leading slash, a trailing one)

	immutableCC string
	documentCC  string
	lease       time.Duration

	maxListObjects, maxListPages int

	mu   sync.Mutex
	held *heldLock  // the exclusive lock while this instance holds it
	pub  *publisher // the Publish lock while this instance holds it
}

var _ layout.Store = (*Store)(nil)

// New returns the store of uri, s3://BUCKET/ or s3://BUCKET/PREFIX/,
// configured from cfg (see Config). The bucket must exist: New checks it
// with HeadBucket and never creates it; a missing bucket is an error
// wrapping ErrNoSuchBucket. Nothing is written until Lock.
func New(ctx context.Context, uri string, cfg Config) (*Store, error) {
	bucket, prefix, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	env := environ.Parse(cfg.Environ)
	for _, name := range []string{EnvImmutableCacheControl, EnvDocumentCacheControl} {
		if strings.ContainsAny(env[name], "\r\n") {
			return nil, fmt.Errorf("%w: %s: a Cache-Control value is one line", ErrConfig, name)
		}
	}
	cc, err := loadConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w: %w", bucket, prefix, ErrConfig, err)
	}
	s := &Store{
		client:      s3.NewFromConfig(cc.aws, cc.s3Opts...),
		bucket:      bucket,
		prefix:      prefix,
		immutableCC: cacheControl(cfg.ImmutableCacheControl, env[EnvImmutableCacheControl], DefaultImmutableCacheControl),
		documentCC:  cacheControl(cfg.DocumentCacheControl, env[EnvDocumentCacheControl], DefaultDocumentCacheControl),
		lease:       cfg.LockLease,

		maxListObjects: orDefault(cfg.MaxListObjects, DefaultMaxListObjects),
		maxListPages:   orDefault(cfg.MaxListPages, DefaultMaxListPages),
	}
	if s.lease <= 0 {
		s.lease = DefaultLockLease
	}
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// cacheControl is the first setting given, the configuration's or the
// environment's, else def; NoCacheControl stores none.
func cacheControl(v, fromEnv, def string) string {
	if v == "" {
		v = fromEnv
	}
	switch v {
	case "":
		return def
	case NoCacheControl:
		return ""
	}
	return v
}

// ParseURI splits s3://BUCKET/PREFIX into the bucket and the prefix,
// normalized to no leading slash and, unless empty, a trailing slash.
func ParseURI(uri string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an S3 URI: want s3://BUCKET/ or s3://BUCKET/PREFIX/", uri)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if strings.ContainsAny(bucket, "@:") {
		// Never repeat it: it may hold a credential.
		return "", "", errors.New("an S3 URI names a bucket, without credentials, user or port (s3://BUCKET/PREFIX/); credentials come from the environment")
	}
	if err := checkBucketName(bucket); err != nil {
		return "", "", fmt.Errorf("S3 URI %q: %w", uri, err)
	}
	if strings.ContainsAny(prefix, "?#\\\x00") {
		return "", "", fmt.Errorf("S3 URI %q: the prefix must not contain '?', '#', '\\' or NUL", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return bucket, "", nil
	}
	for _, part := range strings.Split(prefix, "/") {
		switch part {
		case "", ".", "..":
			return "", "", fmt.Errorf("S3 URI %q: the prefix must not contain an empty, '.' or '..' component", uri)
		case layout.PrivateDirName:
			return "", "", fmt.Errorf("S3 URI %q: the prefix must not be inside tfmirror's private %s", uri, layout.PrivateDirName)
		}
	}
	return bucket, prefix + "/", nil
}

// checkBucketName accepts the names S3 and S3-compatible stores allow:
// 3 to 63 letters, digits, dots, hyphens and underscores (the last two and
// capitals only in legacy or non-AWS buckets), starting and ending with a
// letter or digit.
func checkBucketName(b string) error {
	if b == "" {
		return errors.New("no bucket: want s3://BUCKET/ or s3://BUCKET/PREFIX/")
	}
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q: must be 3 to 63 characters long", b)
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	for i := range len(b) {
		if c := b[i]; !alnum(c) && c != '.' && c != '-' && c != '_' {
			return fmt.Errorf("bucket name %q: letters, digits, '.', '-' and '_' only", b)
		}
	}
	if !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return fmt.Errorf("bucket name %q: must start and end with a letter or digit", b)
	}
	return nil
}

// Location is s3://BUCKET/PREFIX/: no endpoint, no credential.
func (s *Store) Location() string { return "s3://" + s.bucket + "/" + s.prefix }

// Bucket is the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

// Prefix is the store's key prefix, "" or ending in a slash.
func (s *Store) Prefix() string { return s.prefix }

// url names an object in messages.
func (s *Store) url(key string) string { return "s3://" + s.bucket + "/" + key }

// fail wraps an SDK error with the object it concerns.
func (s *Store) fail(key string, err error) error {
	return fmt.Errorf("%s: %w", s.url(key), err)
}

// where names the endpoint in messages about reaching it.
func (s *Store) where() string {
	if ep := aws.ToString(s.client.Options().BaseEndpoint); ep != "" {
		return "the S3 endpoint " + ep
	}
	return "the AWS S3 endpoint of region " + s.client.Options().Region
}

// noCredentials says whether a request failed before it was sent because
// the SDK found no credentials to sign it with (its identity step, which
// has no error type of its own).
func noCredentials(err error) bool {
	return strings.Contains(err.Error(), "get identity: ")
}

// checkBucket makes sure the bucket exists and the credentials are
// accepted, with an error that says which of the usual problems it is.
func (s *Store) checkBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	if err == nil {
		return nil
	}
	loc := s.Location()
	status := statusCode(err)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", loc, err)
	case status == 0 && noCredentials(err):
		return fmt.Errorf("%s: no AWS credentials were found for bucket %s (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the machine's role): %w", loc, s.bucket, err)
	case status == 0:
		return fmt.Errorf("%s: cannot reach %s: %w", loc, s.where(), err)
	case status == http.StatusMovedPermanently:
		if region := responseHeader(err, "X-Amz-Bucket-Region"); region != "" {
			return fmt.Errorf("%s: bucket %s is in region %s, not %s: set AWS_REGION=%s",
				loc, s.bucket, region, s.client.Options().Region, region)
		}
	}
	// A HEAD answer has no body to say what went wrong (and some stores
	// answer an unknown access key with 404): ask again with a request
	// whose answer has one.
	_, lerr := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix), MaxKeys: aws.Int32(1),
	})
	if lerr == nil {
		return nil
	}
	if statusCode(lerr) != 0 {
		err, status = lerr, statusCode(lerr)
	}
	switch code := errorCode(err); {
	case code == "NoSuchBucket", status == http.StatusNotFound && (code == "" || code == "NotFound"):
		return fmt.Errorf("%s: bucket %s at %s: %w", loc, s.bucket, s.where(), ErrNoSuchBucket)
	case credentialCodes[code]:
		return fmt.Errorf("%s: %s refused the credentials for bucket %s: %w", loc, s.where(), s.bucket, err)
	case isRefused(err):
		return fmt.Errorf("%s: access to bucket %s was refused (no s3:ListBucket permission?): %w", loc, s.bucket, err)
	}
	return fmt.Errorf("%s: bucket %s: %w", loc, s.bucket, err)
}

// credentialCodes are the error codes of credentials the store does not
// accept.
var credentialCodes = map[string]bool{
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"TokenRefreshRequired":  true,
	"XAdminUserNotFound":    true, // versitygw's answer for an unknown key
}

// responseHeader is a header of a failed request's answer.
func responseHeader(err error, name string) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get(name)
	}
	return ""
}

// key is the object key of a valid relative path.
func (s *Store) key(rel string) (string, error) {
	if rel == "" || rel == "." || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel ||
		rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsAny(rel, "\\\x00") {
		return "", fmt.Errorf("%s: invalid path %q in the tree", s.Location(), rel)
	}
	return s.prefix + rel, nil
}

// writeKey is key for a Put or Delete, which never touch the private
// directory.
func (s *Store) writeKey(rel string) (string, error) {
	if rel == layout.PrivateDirName || strings.HasPrefix(rel, layout.PrivateDirName+"/") {
		return "", fmt.Errorf("%s: %s is tfmirror's private directory, not part of the tree", s.Location(), rel)
	}
	return s.key(rel)
}

// ReadFile returns a whole object, refusing one larger than limit bytes
// without reading past the limit.
func (s *Store) ReadFile(ctx context.Context, rel string, limit int64) ([]byte, error) {
	data, _, err := s.read(ctx, rel, limit)
	return data, err
}

func (s *Store) read(ctx context.Context, rel string, limit int64) ([]byte, string, error) {
	key, err := s.key(rel)
	if err != nil {
		return nil, "", err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, "", s.readError(key, err)
	}
	defer out.Body.Close()
	limit = max(limit, 0)
	if n := aws.ToInt64(out.ContentLength); n > limit {
		return nil, "", fmt.Errorf("read %s: %d bytes, %w of %d bytes", s.url(key), n, layout.ErrTooLarge, limit)
	}
	n := limit
	if n < math.MaxInt64 {
		n++
	}
	data, err := io.ReadAll(io.LimitReader(out.Body, n))
	if err != nil {
		return nil, "", s.fail(key, err)
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("read %s: %w of %d bytes", s.url(key), layout.ErrTooLarge, limit)
	}
	return data, aws.ToString(out.ETag), nil
}

// readError wraps a failed GET or HEAD; a missing object wraps
// fs.ErrNotExist.
func (s *Store) readError(key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%s: %w", s.url(key), fs.ErrNotExist)
	}
	return s.fail(key, err)
}

// Open streams an object.
func (s *Store) Open(ctx context.Context, rel string) (io.ReadCloser, error) {
	key, err := s.key(rel)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, s.readError(key, err)
	}
	return out.Body, nil
}

// metaSHA256 is the user metadata key (x-amz-meta-sha256) holding the
// hex SHA-256 of an object's content, written by Put.
const metaSHA256 = "sha256"

// Stat describes an object with HeadObject: its size, and its SHA-256
// when its metadata holds one, so that comparing an archive never needs
// a download.
func (s *Store) Stat(ctx context.Context, rel string) (layout.FileInfo, error) {
	key, err := s.key(rel)
	if err != nil {
		return layout.FileInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return layout.FileInfo{}, s.readError(key, err)
	}
	info := layout.FileInfo{Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}
	if sum, err := hex.DecodeString(out.Metadata[metaSHA256]); err == nil && len(sum) == sha256.Size {
		info.SHA256 = [sha256.Size]byte(sum)
	}
	return info, nil
}

// cacheControlOf is the Cache-Control of a file of the tree: immutable
// for archives, checksums and signatures, short for documents, none for
// anything else.
func (s *Store) cacheControlOf(rel string) string {
	switch name := path.Base(rel); {
	case strings.HasSuffix(name, ".zip"), strings.HasSuffix(name, "SHA256SUMS"), strings.HasSuffix(name, ".sig"):
		return s.immutableCC
	case strings.HasSuffix(name, ".json"), strings.HasSuffix(name, ".html"), strings.HasSuffix(name, ".atom"), strings.HasSuffix(name, ".asc"):
		return s.documentCC
	}
	return ""
}

// object is what a Put writes besides the content.
type object struct {
	key          string
	contentType  string
	cacheControl string
	sha256       string // hex
	// The conditions of a PutIf; nil for a Put.
	ifMatch, ifNoneMatch *string
}

// conditions are the request conditions of PutIf's tag.
func conditions(tag string) (ifMatch, ifNoneMatch *string) {
	if tag == "" {
		return nil, aws.String("*")
	}
	return aws.String(tag), nil
}

// putError wraps a failed write; a condition that did not hold wraps
// layout.ErrChanged.
func (s *Store) putError(obj object, err error) error {
	switch {
	case obj.conditional() && isPreconditionFailed(err):
		return fmt.Errorf("%s: %w", s.url(obj.key), layout.ErrChanged)
	case isDigestMismatch(err):
		return fmt.Errorf("%s: the store received bytes whose SHA-256 is not %s, the digest checked before the upload (was the file changed meanwhile?): %w", s.url(obj.key), obj.sha256, err)
	}
	return s.fail(obj.key, err)
}

func (o object) metadata() map[string]string { return map[string]string{metaSHA256: o.sha256} }

// conditional reports whether the write is a PutIf's.
func (o object) conditional() bool { return o.ifMatch != nil || o.ifNoneMatch != nil }

// Put makes rel hold c: Data, or the local file File (which is read,
// never changed or removed, Move or not), with the Content-Type and
// Cache-Control of its name and its SHA-256 in the metadata (File's is
// c.SHA256 when the caller gives it, else read from File first). It
// needs the lock.
func (s *Store) Put(ctx context.Context, rel string, c layout.Content) error {
	return s.put(ctx, rel, c, nil)
}

// PutIf is Put conditional on the object's ETag (If-Match), or for an
// empty tag on there being no object (If-None-Match: *), for a plain
// upload and a multipart one alike. When the condition does not hold it
// writes nothing and returns an error wrapping layout.ErrChanged.
func (s *Store) PutIf(ctx context.Context, rel string, c layout.Content, tag string) error {
	return s.put(ctx, rel, c, &tag)
}

// ReadTagged is ReadFile that also returns the object's ETag.
func (s *Store) ReadTagged(ctx context.Context, rel string, limit int64) ([]byte, string, error) {
	return s.read(ctx, rel, limit)
}

var _ layout.Conditional = (*Store)(nil)

func (s *Store) put(ctx context.Context, rel string, c layout.Content, tag *string) error {
	if err := s.checkLocked(ctx); err != nil {
		return err
	}
	key, err := s.writeKey(rel)
	if err != nil {
		return err
	}
	obj := object{key: key, contentType: layout.MediaType(rel), cacheControl: s.cacheControlOf(rel)}
	if tag != nil {
		obj.ifMatch, obj.ifNoneMatch = conditions(*tag)
	}
	if c.Data != nil || c.File == "" {
		sum := sha256.Sum256(c.Data)
		obj.sha256 = hex.EncodeToString(sum[:])
		return s.putObject(ctx, obj, bytes.NewReader(c.Data), int64(len(c.Data)))
	}
	f, err := os.Open(c.File)
	if err != nil {
		return fmt.Errorf("upload %s: %w", s.url(key), err)
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("upload %s: %w", s.url(key), err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("upload %s from %s: %w", s.url(key), c.File, layout.ErrNotRegular)
	}
	size := info.Size()
	sum := c.SHA256
	if sum == ([sha256.Size]byte{}) {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
			return fmt.Errorf("upload %s: read %s: %w", s.url(key), c.File, err)
		}
		sum = [sha256.Size]byte(h.Sum(nil))
	}
	obj.sha256 = hex.EncodeToString(sum[:])
	if size >= multipartThreshold {
		return s.putMultipart(ctx, obj, f, size)
	}
	// A section reader is seekable, which the SDK needs to sign the body
	// over plain http://, and reads nothing past size.
	return s.putObject(ctx, obj, io.NewSectionReader(f, 0, size), size)
}

// putObject writes an object with one request.
func (s *Store) putObject(ctx context.Context, obj object, body io.ReadSeeker, size int64) error {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(obj.key),
		Body:          body,
		ContentLength: aws.Int64(size),
		ContentType:   aws.String(obj.contentType),
		Metadata:      obj.metadata(),
		IfMatch:       obj.ifMatch,
		IfNoneMatch:   obj.ifNoneMatch,
	}
	if obj.cacheControl != "" {
		in.CacheControl = aws.String(obj.cacheControl)
	}
	if _, err := s.client.PutObject(ctx, in, signedWith(obj.sha256)); err != nil {
		return s.putError(obj, err)
	}
	return nil
}

// signedWith signs a request with sha256Hex as its payload hash: the
// SHA-256 of the body, which the caller already knows (for an archive,
// the verified digest). The SDK would otherwise read the whole body once
// more to compute it; and the store refuses a body that does not hash to
// it, so a file changed between its verification and its upload never
// becomes an object.
func signedWith(sha256Hex string) func(*s3.Options) {
	known := smithymw.FinalizeMiddlewareFunc("KnownPayloadHash", func(ctx context.Context, in smithymw.FinalizeInput, next smithymw.FinalizeHandler) (smithymw.FinalizeOutput, smithymw.Metadata, error) {
		return next.HandleFinalize(v4.SetPayloadHash(ctx, sha256Hex), in)
	})
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *smithymw.Stack) error {
			// First in the step: the SDK's own checksum middleware, when
			// trailing checksums are on, replaces it with its marker.
			return stack.Finalize.Add(known, smithymw.Before)
		})
	}
}

// Delete removes an object; a missing one is not an error. It needs the
// lock.
func (s *Store) Delete(ctx context.Context, rel string) error {
	if err := s.checkLocked(ctx); err != nil {
		return err
	}
	key, err := s.writeKey(rel)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil && !isNotFound(err) {
		return s.fail(key, err)
	}
	return nil
}

// List returns every object below the directory dir ("" for the whole
// tree), sorted, relative to the tree's root, leaving out the private
// directory and "directory marker" keys ending in a slash. A listing
// longer than the store's bounds (Config.MaxListObjects,
// Config.MaxListPages) is an error wrapping ErrListTooLong.
func (s *Store) List(ctx context.Context, dir string) ([]string, error) {
	var out []string
	err := s.list(ctx, dir, func(rel string, _ int64) { out = append(out, rel) })
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// ListSizes is List with the size the listing gives each object: what a
// reader that copies the objects may expect to read of each.
func (s *Store) ListSizes(ctx context.Context, dir string) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.list(ctx, dir, func(rel string, size int64) { out[rel] = size })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// list calls found with each object List lists and its size.
func (s *Store) list(ctx context.Context, dir string, found func(rel string, size int64)) error {
	prefix := s.prefix
	if dir = strings.TrimSuffix(dir, "/"); dir != "" {
		key, err := s.key(dir)
		if err != nil {
			return err
		}
		prefix = key + "/"
	}
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	bound := listBound{s: s, what: "list " + s.url(prefix)}
	for pages.HasMorePages() {
		if err := bound.next(); err != nil {
			return err
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", s.url(prefix), err)
		}
		if err := bound.add(len(page.Contents)); err != nil {
			return err
		}
		for _, o := range page.Contents {
			rel, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || rel == "" || strings.HasSuffix(rel, "/") ||
				rel == layout.PrivateDirName || strings.HasPrefix(rel, layout.PrivateDirName+"/") {
				continue
			}
			found(rel, aws.ToInt64(o.Size))
		}
	}
	return nil
}

// serverTime is the Date of a request's answer, the store's clock; ok is
// false when the answer had none.
func serverTime(md smithymw.Metadata) (t time.Time, ok bool) {
	raw, _ := awsmw.GetRawResponse(md).(*smithyhttp.Response)
	if raw == nil {
		return time.Time{}, false
	}
	t, err := http.ParseTime(raw.Header.Get("Date"))
	return t, err == nil
}
