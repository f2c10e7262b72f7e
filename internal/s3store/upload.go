package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// Multipart uploads are written here on service/s3 directly rather than
// with feature/s3/manager, which AWS deprecated in favour of the
// pre-1.0 feature/s3/transfermanager: a file is uploaded in parts read
// straight from it (io.SectionReader, seekable, so signing works over
// plain http:// too), so memory does not grow with the part size or the
// concurrency.
const (
	// multipartThreshold is the size from which a file is uploaded in
	// parts.
	multipartThreshold = 64 << 20
	// partSize is the size of a part, grown for files of more than
	// maxParts parts.
	partSize = 16 << 20
	// maxParts is S3's limit of parts per upload.
	maxParts = 10000
	// uploadConcurrency bounds the parts in flight.
	uploadConcurrency = 4
	// abortTimeout bounds aborting a failed upload.
	abortTimeout = 30 * time.Second
)

// putMultipart uploads size bytes of f as a multipart upload: the object
// appears, complete, only when CompleteMultipartUpload succeeds. A failed
// upload is aborted; one the process could not abort (it was killed) is
// aborted by a later writer (see abortUploads).
func (s *Store) putMultipart(ctx context.Context, obj object, f io.ReaderAt, size int64) error {
	in := &s3.CreateMultipartUploadInput{
		Bucket:      aws.String(s.bucket),
		Key:         aws.String(obj.key),
		ContentType: aws.String(obj.contentType),
		Metadata:    obj.metadata(),
	}
	if obj.cacheControl != "" {
		in.CacheControl = aws.String(obj.cacheControl)
	}
	created, err := s.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return s.fail(obj.key, err)
	}
	id := created.UploadId
	err = s.uploadParts(ctx, obj, id, f, size)
	if err != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		_, aerr := s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(obj.key), UploadId: id,
		})
		if aerr != nil && !isNotFound(aerr) {
			err = errors.Join(err, fmt.Errorf("abort the upload (a later writer will): %w", aerr))
		}
		if obj.conditional() && isPreconditionFailed(err) {
			return s.putError(obj, err)
		}
		return s.fail(obj.key, fmt.Errorf("multipart upload: %w", err))
	}
	return nil
}

// uploadParts uploads the parts, at most uploadConcurrency at a time, and
// completes the upload.
func (s *Store) uploadParts(ctx context.Context, obj object, id *string, f io.ReaderAt, size int64) error {
	key := obj.key
	part := max(int64(partSize), (size+maxParts-1)/maxParts)
	n := int((size + part - 1) / part)
	parts := make([]types.CompletedPart, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(uploadConcurrency)
	for i := range n {
		off := int64(i) * part
		length := min(part, size-off)
		num := aws.Int32(int32(i + 1)) // i < maxParts
		g.Go(func() error {
			out, err := s.client.UploadPart(gctx, &s3.UploadPartInput{
				Bucket:        aws.String(s.bucket),
				Key:           aws.String(key),
				UploadId:      id,
				PartNumber:    num,
				Body:          io.NewSectionReader(f, off, length),
				ContentLength: aws.Int64(length),
			})
			if err != nil {
				return fmt.Errorf("part %d of %d: %w", *num, n, err)
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: num}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             aws.String(key),
		UploadId:        id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		IfMatch:         obj.ifMatch,
		IfNoneMatch:     obj.ifNoneMatch,
	})
	return err
}

// staleUploadAge is the age from which a publisher aborts a multipart
// upload it finds: other publishers may be uploading right now, and no
// upload of tfmirror's lasts that long.
const staleUploadAge = 24 * time.Hour

// abortUploads aborts the multipart uploads under the prefix initiated
// more than olderThan ago (all of them for 0: with the exclusive lock
// held, none belongs to a live writer). A store that does not let the
// credentials list or abort uploads is left alone (a bucket lifecycle
// rule AbortIncompleteMultipartUpload then cleans up).
func (s *Store) abortUploads(ctx context.Context, olderThan time.Duration) error {
	pages := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix),
	})
	bound := listBound{s: s, what: "list interrupted uploads under " + s.Location()}
	for pages.HasMorePages() {
		if err := bound.next(); err != nil {
			return err
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			if isRefused(err) || statusCode(err) == 501 {
				return nil
			}
			return fmt.Errorf("list interrupted uploads under %s: %w", s.Location(), err)
		}
		if err := bound.add(len(page.Uploads)); err != nil {
			return err
		}
		for _, u := range page.Uploads {
			if olderThan > 0 && (u.Initiated == nil || time.Since(*u.Initiated) < olderThan) {
				continue
			}
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.bucket), Key: u.Key, UploadId: u.UploadId,
			})
			switch {
			case err == nil, isNotFound(err):
			case isRefused(err):
				return nil
			default:
				return fmt.Errorf("abort an interrupted upload: %w", s.fail(aws.ToString(u.Key), err))
			}
		}
	}
	return nil
}
