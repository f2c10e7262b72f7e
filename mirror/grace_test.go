package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/layout"
)

// hungDest is a destination whose publication never answers (a bucket
// that stopped responding) until its context ends.
type hungDest struct {
	Destination
	publishing chan struct{}
}

func (d hungDest) Publish(ctx context.Context, _ layout.Release) error {
	close(d.publishing)
	<-ctx.Done()
	return context.Cause(ctx)
}

// A publication under way when the build is interrupted goes on for
// publishGrace, not for as long as a destination that no longer answers
// makes it wait.
func TestInterruptedPublicationEnds(t *testing.T) {
	defer func(g time.Duration) { publishGrace = g }(publishGrace)
	publishGrace = 100 * time.Millisecond
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	dir, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	dest := hungDest{Destination: dir.Destination(), publishing: make(chan struct{})}
	b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{dest}, Work: dir.Workspace}
	ctx, interrupt := context.WithCancel(context.Background())
	go func() {
		<-dest.publishing
		interrupt()
	}()
	done := make(chan *Report, 1)
	go func() { done <- b.Build(ctx, []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64")}) }()
	select {
	case r := <-done:
		if r.Err() == nil {
			t.Errorf("the interrupted publication succeeded: %v", statuses(r))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the build still waits for a destination that does not answer, long after the interrupt")
	}
}
