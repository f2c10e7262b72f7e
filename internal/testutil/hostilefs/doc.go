// Package hostilefs makes the files a reader of outside input must refuse
// without hanging or running out of memory (a named pipe with no writer, a
// link to /dev/zero, a sparse file larger than any cap), and runs the
// reader under a deadline that releases a pipe it is stuck on. Unix only.
// Test use only.
package hostilefs
