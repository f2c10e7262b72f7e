package s3store

import (
	"errors"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// ErrNoSuchBucket means the URI's bucket does not exist. The store never
// creates one.
var ErrNoSuchBucket = errors.New("the bucket does not exist (tfmirror never creates buckets)")

// ErrConfig means the store's configuration cannot be used (the endpoint,
// the credentials, the CA file or a Cache-Control the environment names):
// New wraps it before sending any request.
var ErrConfig = errors.New("the S3 configuration cannot be used")

// statusCode is the HTTP status of a failed request's answer, 0 when
// there was none (a connection error).
func statusCode(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// errorCode is the S3 error code of a failed request ("NoSuchKey"), ""
// when there was none.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound reports whether err says the object does not exist. A
// missing bucket is not a missing object where the answer says so (GET);
// a HEAD answer has no body to tell them apart.
func isNotFound(err error) bool {
	switch errorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	case "NoSuchBucket":
		return false
	}
	return statusCode(err) == http.StatusNotFound
}

// isPreconditionFailed reports whether a conditional request was refused
// because its condition did not hold (412), or because another
// conditional write to the key was in flight (409, AWS's
// ConditionalRequestConflict): either way another writer won.
func isPreconditionFailed(err error) bool {
	switch errorCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	s := statusCode(err)
	return s == http.StatusPreconditionFailed || s == http.StatusConflict
}

// isRefused reports whether the store refused the request: wrong
// credentials or no permission.
func isRefused(err error) bool {
	s := statusCode(err)
	return s == http.StatusForbidden || s == http.StatusUnauthorized
}

// isDigestMismatch reports whether the store refused a body that does not
// hash to the SHA-256 the request was signed with (or to its Content-MD5).
func isDigestMismatch(err error) bool {
	switch errorCode(err) {
	case "XAmzContentSHA256Mismatch", "BadDigest":
		return true
	}
	return false
}
