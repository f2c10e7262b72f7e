package syncx

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A context with grace lives on after its parent ends, for the grace and
// no longer, and ends with the parent's cause.
func TestGrace(t *testing.T) {
	parent, cancelParent := context.WithCancelCause(context.Background())
	ctx, cancel := Grace(parent, 50*time.Millisecond)
	defer cancel()
	interrupt := errors.New("interrupted")
	cancelParent(interrupt)
	began := time.Now()
	select {
	case <-ctx.Done():
		t.Fatal("ended with its parent, before the grace")
	case <-time.After(20 * time.Millisecond):
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("still alive long after the grace")
	}
	if d := time.Since(began); d < 50*time.Millisecond {
		t.Errorf("ended after %s, before the grace of 50ms", d)
	}
	if !errors.Is(context.Cause(ctx), interrupt) {
		t.Errorf("cause %v, want the parent's", context.Cause(ctx))
	}

	ctx, cancel = Grace(context.Background(), time.Hour)
	cancel()
	if ctx.Err() == nil {
		t.Error("cancel did not end it")
	}
}
