package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/internal/app"
)

// SchemaVersion is the version of the --json stream's shape
// (docs/json.md): it changes when a field changes meaning or goes away,
// not when one is added.
const SchemaVersion = 1

// Options say how a printer writes.
type Options struct {
	// JSON writes one JSON object per line: a "start" event, the
	// command's events, and always a "summary" last.
	JSON bool
	// Quiet prints only problems (failures, warnings) and the summary.
	Quiet bool
	// Verbose also prints what is routine: retried requests, waits.
	Verbose bool
	// CI is a CI job (CI=true): no status line, even on a terminal, as
	// for Quiet and JSON: a CI log would keep every redraw.
	CI bool
	// Command and Version name what runs, in the start event.
	Command, Version string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Printer renders a command's events and reports for people (one line per
// package, a summary) or for CI (one JSON object per line). With JSON,
// every line has an "event" and a "time"; the first is "start" (with the
// schema version) and the last is always "summary" (with the exit code),
// also when the command failed before it had anything to report
// (Finish).
type Printer struct {
	w    io.Writer
	opts Options

	mu         sync.Mutex
	started    time.Time
	summarized bool
	progress   *progressLine // nil unless a terminal shows a status line
	// deferred holds a dry run's results, printed sorted at its summary.
	deferred bool
}

// New returns a printer writing to w, JSON lines when asJSON.
func New(w io.Writer, asJSON bool) *Printer { return NewWith(w, Options{JSON: asJSON}) }

// NewWith returns a printer with options.
func NewWith(w io.Writer, opts Options) *Printer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Printer{w: w, opts: opts, started: opts.Now()}
}

// JSON reports whether the printer writes JSON lines.
func (p *Printer) JSON() bool { return p.opts.JSON }

// Start writes the start event (JSON only): the command, tfmirror's
// version and the stream's schema version.
func (p *Printer) Start() {
	if !p.opts.JSON {
		return
	}
	p.emit("start", struct {
		Schema  int    `json:"schema"`
		Command string `json:"command,omitempty"`
		Version string `json:"version,omitempty"`
	}{SchemaVersion, p.opts.Command, p.opts.Version})
}

// Elapsed is the time since the printer was made.
func (p *Printer) Elapsed() time.Duration { return p.opts.Now().Sub(p.started) }

// Line prints a message for people; in --json mode, a "message" event.
// Quiet leaves it out.
func (p *Printer) Line(msg string) {
	if p.opts.Quiet {
		return
	}
	p.say(msg)
}

// say prints a line whatever Quiet says: a problem.
func (p *Printer) say(msg string) {
	if p.opts.JSON {
		p.emit("message", struct {
			Message string `json:"message"`
		}{msg})
		return
	}
	p.progress.hold(func() { fmt.Fprintln(p.w, msg) })
}

// Warnings prints what reading configurations (or anything else) warned
// about: problems, printed even when quiet.
func (p *Printer) Warnings(warnings []string) {
	for _, w := range warnings {
		if p.opts.JSON {
			p.emit("warning", struct {
				Message string `json:"message"`
			}{WithHints(w)})
			continue
		}
		p.say("warning: " + WithHints(w))
	}
}

// Finish closes the output of a command that ended with err (nil when it
// succeeded): with JSON, an "error" event for err and the summary with
// the exit code, unless the command wrote its summary already; for people
// nothing, the command line prints err itself.
func (p *Printer) Finish(err error) {
	p.StopProgress()
	if !p.opts.JSON || p.isSummarized() {
		return
	}
	p.Summary(nil, err)
}

func (p *Printer) isSummarized() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.summarized
}

// summary is what every summary event holds.
type summary struct {
	Schema         int     `json:"schema"`
	ExitCode       int     `json:"exit_code"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Interrupted    bool    `json:"interrupted,omitempty"`
	Error          string  `json:"error,omitempty"`
}

// Summary writes the summary event (JSON only), with the command's own
// fields (a struct, or nil) after the common ones: the schema version, the
// exit code of err, the elapsed time, and whether the command was
// interrupted. A printer writes one summary at most.
func (p *Printer) Summary(fields any, err error) {
	p.mu.Lock()
	done := p.summarized
	p.summarized = true
	p.mu.Unlock()
	if done || !p.opts.JSON {
		return
	}
	s := summary{
		Schema: SchemaVersion, ExitCode: app.ExitCode(err), ElapsedSeconds: seconds(p.Elapsed()),
		Interrupted: errors.Is(err, context.Canceled),
	}
	if err != nil {
		s.Error = Headline(err)
		message := err.Error()
		if s.Interrupted {
			message = s.Error // not the cancellations of every step it stopped
		}
		p.emit("error", struct {
			Message string `json:"message"`
		}{message})
	}
	p.emit("summary", merge(s, fields))
}

// Headline is err on one line, as standard error shows it with --json and
// the summary's "error" holds it: "interrupted" for an interrupted command
// (whatever it was doing then), else the error's lines joined (the
// "error" event keeps them apart).
func Headline(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	var b strings.Builder
	for line := range strings.Lines(err.Error()) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if s := b.String(); s != "" {
			if strings.HasSuffix(s, ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// emit writes one JSON line of an event: "event" first, then ev's fields
// (a struct), then "time".
func (p *Printer) emit(event string, ev any) {
	line := merge(struct {
		Event string `json:"event"`
	}{event}, ev, struct {
		Time string `json:"time"`
	}{p.opts.Now().UTC().Format(time.RFC3339Nano)})
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s\n", line)
}

// merge joins the fields of JSON objects (structs, or raw objects) into
// one, in order; nil parts are left out.
func merge(parts ...any) json.RawMessage {
	out := []byte{'{'}
	for _, part := range parts {
		if part == nil {
			continue
		}
		data, err := json.Marshal(part)
		if err != nil || len(data) < 2 || data[0] != '{' {
			continue
		}
		inner := data[1 : len(data)-1]
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, '}')
}

// Retry says that a request is tried again (notify.Handler): a "retry"
// event with --json; for people a line with --verbose only, since a
// retry that then works is routine.
func (p *Printer) Retry(url string, attempt int, delay time.Duration, err error) {
	msg := fmt.Sprintf("retrying %s in %s (attempt %d): %v", url, delay.Round(time.Millisecond), attempt, err)
	if p.opts.JSON {
		p.emit("retry", struct {
			URL          string  `json:"url"`
			Attempt      int     `json:"attempt"`
			DelaySeconds float64 `json:"delay_seconds"`
			Message      string  `json:"message"`
		}{url, attempt, seconds(delay), msg})
		return
	}
	if p.opts.Verbose && !p.opts.Quiet {
		p.say(msg)
	}
}

// Wait says that the command waits for something another writer holds
// (notify.Handler): a "waiting" event with --json, a line for people
// unless quiet, since a command that seems stuck should say why.
func (p *Printer) Wait(what, holder string, upTo time.Duration) {
	if p.opts.JSON {
		p.emit("waiting", struct {
			What        string  `json:"what"`
			Holder      string  `json:"holder,omitempty"`
			UpToSeconds float64 `json:"up_to_seconds"`
		}{what, holder, seconds(upTo.Round(time.Second))})
		return
	}
	msg := "waiting for " + what
	if holder != "" {
		msg += " (held by " + holder + ")"
	}
	p.Line(fmt.Sprintf("%s, up to %s", msg, upTo.Round(time.Second)))
}

// seconds is d in seconds to the millisecond, as JSON prints it: 1.719,
// not the 1.7189999999999999 that adding its whole and fractional
// seconds gives.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond).Milliseconds()) / 1000
}
