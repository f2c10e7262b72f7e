package hclsafe

import (
	"bytes"
	"fmt"
	"math"
	"unicode/utf8"
)

// Syntax is how CheckDepth reads its source.
type Syntax int

const (
	// Native is a file in HCL's native syntax (.hcl, .tf, .tofu).
	Native Syntax = iota
	// JSON is a file in HCL's JSON syntax (.tf.json, .tofu.json). Its
	// strings are read as templates, as HCL evaluates them.
	JSON
	// Expression is one native-syntax expression, such as the string of a
	// JSON attribute that HCL or its caller parses as a reference.
	Expression
)

// Depth returns the deepest nesting in src, as CheckDepth counts it. When
// src holds something CheckDepth refuses whatever the depth (invalid UTF-8
// in code, a heredoc marker that is not ASCII), ok is false and depth
// covers only what comes before it.
func Depth(src []byte, syntax Syntax) (depth int, ok bool) {
	s := scan(src, syntax, math.MaxInt)
	return s.max, s.at < 0
}

// CheckDepth returns an *Error when src nests deeper than MaxDepth; filename
// is used in the message. It follows the HCL scanner's modes (strings,
// heredocs, comments, template sequences), so that it counts every bracket
// HCL will see. Two things HCL's scanner reads by its Unicode tables are
// refused as well, since the mode that follows depends on them: invalid
// UTF-8 outside comments and strings, and heredoc markers that are not
// ASCII. Syntax errors are left to HCL.
func CheckDepth(src []byte, filename string, syntax Syntax) error {
	s := scan(src, syntax, MaxDepth)
	if s.at < 0 {
		return nil
	}
	line, col := position(src, s.at)
	e := &Error{Filename: filename, Line: line, Column: col}
	switch s.why {
	case badEncoding:
		e.Summary = "Invalid character encoding"
		e.Detail = "The file is not valid UTF-8 here, outside any comment or string."
	case badMarker:
		e.Summary = "Unsupported heredoc marker"
		e.Detail = "tfmirror reads only heredoc markers made of ASCII letters, digits, underscores and hyphens."
	default:
		e.Summary = "Nesting too deep"
		e.Detail = fmt.Sprintf("Brackets, strings, templates and operators are nested more than %d levels deep here. "+
			"tfmirror refuses such input before parsing it, because HCL would exhaust its stack.", MaxDepth)
	}
	return e
}

// scan reads src until it ends or nests deeper than limit.
func scan(src []byte, syntax Syntax, limit int) *scanner {
	s := &scanner{src: src, limit: limit, at: -1}
	switch syntax {
	case JSON:
		s.push(frame{kind: kGroup})
		s.runJSON()
		return s
	case Expression:
		s.push(frame{kind: kGroup})
	default:
		s.push(frame{kind: kBody})
	}
	s.run()
	return s
}

// position turns a byte offset into a 1-based line and character column.
func position(src []byte, at int) (int, int) {
	start := bytes.LastIndexByte(src[:at], '\n') + 1
	return bytes.Count(src[:at], []byte{'\n'}) + 1, utf8.RuneCount(src[start:at]) + 1
}
