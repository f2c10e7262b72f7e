// Package output renders what commands report: for people, one line per
// package or problem, a summary, a status line on a terminal, and the
// manifest setting that changes a warning; for CI, one JSON object per
// line. The command line hands it reports and events; it decides nothing
// about them.
package output
