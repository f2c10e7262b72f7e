package output

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/internal/size"

	"github.com/tfmirror/tfmirror/mirror"
)

// progressLine keeps one status line up to date at the bottom of a
// terminal: packages done of total, bytes, rate and an estimate of the
// time left. It writes nothing unless w is a terminal.
type progressLine struct {
	w     io.Writer
	total int
	read  func() mirror.Progress
	start time.Time

	mu      sync.Mutex
	visible bool
	stop    chan struct{}
	done    chan struct{}
}

// IsTerminal reports whether w (or the writer a SafeWriter wraps) is a
// character device, such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := raw(w).(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// raw is the writer behind a SafeWriter: the status line writes the
// control sequences that redraw it, and nothing from outside.
func raw(w io.Writer) io.Writer {
	if s, ok := w.(*SafeWriter); ok {
		return s.Unwrap()
	}
	return w
}

func startProgress(w io.Writer, total int, read func() mirror.Progress) *progressLine {
	p := &progressLine{w: raw(w), total: total, read: read, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progressLine) loop() {
	defer close(p.done)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
			p.draw()
		}
	}
}

func (p *progressLine) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K%s", p.status(p.read(), time.Since(p.start)))
	p.visible = true
}

func (p *progressLine) status(now mirror.Progress, elapsed time.Duration) string {
	rate := float64(now.Bytes) / max(elapsed.Seconds(), 0.001)
	line := fmt.Sprintf("[%d/%d packages] %s at %s/s", now.Done, p.total, size.Format(now.Bytes), size.Format(int64(rate)))
	var left time.Duration
	switch {
	case now.Sized > 0 && now.Bytes > 0 && now.Done < p.total:
		// What the downloads under way still lack, and an average
		// download for each package neither finished nor started.
		average := float64(now.Expected) / float64(now.Sized)
		notStarted := max(p.total-now.Done-(now.Sized-now.Complete), 0)
		toCome := max(float64(now.Expected-now.Bytes), 0) + average*float64(notStarted)
		left = time.Duration(toCome / rate * float64(time.Second))
	case now.Done > 0 && now.Done < p.total:
		left = time.Duration(float64(elapsed) / float64(now.Done) * float64(p.total-now.Done))
	}
	if left > 0 {
		line += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return line
}

// hold removes the status line, prints a regular line with print, and
// lets the next tick draw the status line again below it. A nil
// progressLine just prints.
func (p *progressLine) hold(print func()) {
	if p == nil {
		print()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.visible {
		fmt.Fprintf(p.w, "\r\033[K")
		p.visible = false
	}
	print()
}

// finish stops the updates and removes the line.
func (p *progressLine) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.hold(func() {})
}
