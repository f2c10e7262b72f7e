package inputerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestWrapAndIs(t *testing.T) {
	base := errors.New("s3:/x: did you mean s3://x?")
	if Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
	err := fmt.Errorf("--out: %w", Wrap(base))
	if !Is(err) {
		t.Fatal("a wrapped input error is not found")
	}
	if !errors.Is(err, base) {
		t.Fatal("the cause is lost")
	}
	if err.Error() != "--out: s3:/x: did you mean s3://x?" {
		t.Fatalf("message = %q", err)
	}
	if Is(base) || Is(nil) {
		t.Fatal("a plain error counts as input")
	}
}
