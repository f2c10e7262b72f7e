package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// ParseAge reads a minimum release age: a Go duration ("36h", "90m") or
// a whole number of days or weeks ("7d", "2w"); "0" is none.
func ParseAge(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil && n != "" && !strings.ContainsFunc(n, func(r rune) bool { return r < '0' || r > '9' }) || v > 3650 {
				return 0, fmt.Errorf("%q: too long, at most 3650%s", s, suffix)
			}
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%q: want a whole number of days or weeks, such as \"7d\"", s)
			}
			return time.Duration(v) * unit, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration such as \"7d\", \"36h\" or \"0\"", s)
	}
	return d, nil
}

// decodeAge reads a min_age attribute, if the content has one.
func decodeAge(content *hcl.BodyContent) (*time.Duration, hcl.Diagnostics) {
	attr, ok := content.Attributes["min_age"]
	if !ok {
		return nil, nil
	}
	var s string
	if ds := gohcl.DecodeExpression(attr.Expr, nil, &s); ds.HasErrors() {
		return nil, ds
	}
	d, err := ParseAge(s)
	if err != nil {
		return nil, errAt(attr.Expr.Range(), "Invalid min_age", err.Error())
	}
	return &d, nil
}
