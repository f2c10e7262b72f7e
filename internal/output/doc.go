// Package output renders what commands report: for people, one line per
// package or problem, a summary, a status line on a terminal, and the
// manifest setting that changes a warning; for CI, one JSON object per
// line. The command line hands it reports and events; it decides nothing
// about them.
//
// It owns the rule that what tfmirror prints is safe to print (Safe):
// every line, text or JSON, on stdout or stderr, has every credential the
// process holds replaced (settings.Redactor) and every terminal control
// character escaped (Escape), whatever outside text it quotes.
package output
