package app

import (
	"context"
	"testing"
	"time"
)

// What a command published before an interrupt is recorded under a
// context the interrupt does not end, within a bound.
func TestFinishingOutlivesTheInterrupt(t *testing.T) {
	live, stop := context.WithCancel(context.Background())
	defer stop()
	if ctx, cancel := Finishing(live); ctx != live {
		t.Error("a live context was replaced")
	} else {
		cancel()
	}
	stop()
	ctx, cancel := Finishing(live)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatalf("the finishing context of an interrupted command is done: %v", ctx.Err())
	}
	if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) > finishBound {
		t.Errorf("the finishing context has no bound: %v %v", deadline, ok)
	}
}
