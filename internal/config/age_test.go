package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "36h": 36 * time.Hour, "0": 0} {
		if got, err := ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"99999999999d": "too long, at most 3650d",
		"4000d":        "too long, at most 3650d",
		"-1d":          "want a whole number of days or weeks",
		"1.5d":         "want a whole number of days or weeks",
		"d":            "want a whole number of days or weeks",
		"soon":         "want a duration",
	} {
		if _, err := ParseAge(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAge(%q) = %v; want %q", in, err, want)
		}
	}
}
