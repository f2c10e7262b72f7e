// Package plural counts things in English for people to read: "1
// provider", "2 providers", "0 advisories". It owns the one rule every
// human-readable summary line and the catalog page use; it knows nothing
// of what is counted, and JSON output never goes through it.
package plural

import "strconv"

// Count is n followed by noun, in the plural unless n is 1. The plural
// adds "s", or turns a final consonant + "y" into "ies".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is noun as it follows the number n.
func Noun(n int, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	if l := len(noun); l > 1 && noun[l-1] == 'y' && !isVowel(noun[l-2]) {
		return noun[:l-1] + "ies"
	}
	return noun + "s"
}

func isVowel(b byte) bool {
	switch b {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}
