// Package mdlinks keeps the repository's markdown navigable: its test
// checks that every relative link in every *.md file (README, docs/,
// examples/, CONTRIBUTING, ...) names a file or directory that exists and,
// when it has a #fragment into a markdown file, a heading of that file.
//
// It holds no code: only the test.
package mdlinks
