package syncx

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	start := time.Now()
	if err := Sleep(t.Context(), 50*time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Sleep(50ms) returned after %s", d)
	}
	if err := Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0): %v", err)
	}
	if err := Sleep(t.Context(), -time.Second); err != nil {
		t.Errorf("Sleep(-1s): %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, d := range []time.Duration{0, time.Hour} {
		start := time.Now()
		if err := Sleep(ctx, d); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep(%s) with a cancelled context: %v", d, err)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Errorf("Sleep(%s) with a cancelled context waited %s", d, waited)
		}
	}

	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Sleep past the context's deadline: %v", err)
	}
}
