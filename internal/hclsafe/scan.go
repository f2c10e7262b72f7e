package hclsafe

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// The scanner mirrors the modes of HCL's scanners (hclsyntax's ragel
// scanner and the JSON scanner): it must agree with them on where every
// string, heredoc, comment and template sequence starts and ends, since a
// bracket it takes for text but HCL takes for code is nesting it misses.
// Inside those modes it only counts. Where it cannot tell, it counts more.

// kind is what a frame of the scanner's stack is.
type kind uint8

const (
	kBody    kind = iota // a body or object: a newline ends an item
	kGroup               // ( [ ${ %{ or a for expression: newlines are spaces
	kQuoted              // a quoted template "...", with backslash escapes
	kHeredoc             // a heredoc, ended by a line holding only its marker
	kBare                // a template to the end of the input (a JSON string)
)

type frame struct {
	kind   kind
	closer byte // ')', ']' or '}' for an expression frame
	// extra is, in an expression frame, the operators and indexes of the
	// item being read, which HCL nests one inside the other; in a template,
	// its open if and for directives.
	extra int
	// brace is the index of the innermost frame that '}' closes, at or
	// below this one and above any template, or -1.
	brace int
	// fresh: only spaces and comments so far, so a keyword here decides
	// what the frame is ("for" after '{', "if" after "%{").
	fresh     bool
	control   bool   // a "%{" template directive
	lineStart bool   // a heredoc at the start of a line
	marker    []byte // a heredoc's end marker
}

type scanner struct {
	src   []byte
	pos   int
	stack []frame
	depth int // frames above the first, plus every frame's extra
	max   int // the deepest depth seen
	limit int
	// operand: the last token ended an operand, so '[' starts an index.
	operand bool
	// noCommentEnd: no "*/" at or after this offset (a search failed).
	noCommentEnd int
	at           int    // where the scan stopped: -1 while it reads on
	why          reason // why it stopped
}

// reason is why the scanner refused its input.
type reason uint8

const (
	tooDeep     reason = iota // nesting past the limit
	badEncoding               // invalid UTF-8 in code
	badMarker                 // a heredoc marker that is not ASCII
)

// fail stops the scan at the current position.
func (s *scanner) fail(why reason) {
	if s.at < 0 {
		s.at, s.why = s.pos, why
	}
}

func (s *scanner) top() *frame { return &s.stack[len(s.stack)-1] }

func (s *scanner) peek(n int) byte {
	if s.pos+n < len(s.src) {
		return s.src[s.pos+n]
	}
	return 0
}

func (s *scanner) deeper(n int) {
	s.depth += n
	s.max = max(s.max, s.depth)
	if s.depth > s.limit {
		s.fail(tooDeep)
	}
}

func (s *scanner) push(f frame) {
	f.brace = -1
	if len(s.stack) > 0 {
		if f.kind < kQuoted {
			f.brace = s.top().brace
		}
		s.deeper(1)
	}
	if f.closer == '}' {
		f.brace = len(s.stack)
	}
	s.stack = append(s.stack, f)
}

func (s *scanner) pop() {
	s.depth -= 1 + s.top().extra
	s.stack = s.stack[:len(s.stack)-1]
}

// bump counts one more operator or index in the current item.
func (s *scanner) bump() {
	s.top().extra++
	s.deeper(1)
}

// reset starts a new item: a comma, or a newline in a body.
func (s *scanner) reset() {
	t := s.top()
	s.depth -= t.extra
	t.extra = 0
	s.operand = false
}

func (s *scanner) run() {
	for s.pos < len(s.src) && s.at < 0 {
		if s.top().kind >= kQuoted {
			s.template()
		} else {
			s.expression()
		}
	}
}

// expression reads one token of native syntax.
func (s *scanner) expression() {
	c := s.src[s.pos]
	switch {
	case c == ' ' || c == '\t' || c == '\r':
		s.pos++
	case c == '\n':
		s.pos++
		if s.top().kind == kBody {
			s.reset()
		}
	case c == '#' || c == '/' && s.peek(1) == '/':
		s.skipLine()
	case c == '/' && s.peek(1) == '*' && s.skipBlockComment():
	default:
		s.token(c)
	}
}

// skipLine skips a line comment, leaving its newline to end the item.
func (s *scanner) skipLine() {
	if nl := bytes.IndexByte(s.src[s.pos:], '\n'); nl >= 0 {
		s.pos += nl
		return
	}
	s.pos = len(s.src)
}

// skipBlockComment skips a "/* */" comment. Without its "*/", HCL reads
// "/" and "*" as operators and goes on, and so must the scanner.
func (s *scanner) skipBlockComment() bool {
	if s.noCommentEnd > 0 && s.pos >= s.noCommentEnd {
		return false
	}
	end := bytes.Index(s.src[s.pos+2:], []byte("*/"))
	if end < 0 {
		s.noCommentEnd = s.pos
		return false
	}
	s.pos += end + 4
	return true
}

func (s *scanner) token(c byte) {
	t := s.top()
	fresh := t.fresh
	t.fresh = false
	switch {
	case isIdentStart(c):
		s.word(fresh)
	case c >= '0' && c <= '9':
		s.number()
	case c == '"':
		s.push(frame{kind: kQuoted})
		s.pos++
	case c == '<' && s.heredoc():
	case c == '(' || c == '[' || c == '{':
		s.open(c)
	case c == ')' || c == ']':
		s.closeGroup(c)
	case c == '}' || c == '~' && s.peek(1) == '}':
		s.closeBrace()
	case c == ',':
		s.pos++
		s.reset()
	case c >= 0xC0 && c <= 0xF7 && ragelRuneLen(s.src[s.pos:]) == 0:
		// HCL's identifier tables take the bytes after such a lead byte
		// whatever they are, quotes and brackets included; there is no
		// telling what it reads here.
		s.fail(badEncoding)
	default:
		s.operator(c)
	}
}

func (s *scanner) word(fresh bool) {
	start := s.pos
	for s.pos < len(s.src) && isIdentPart(s.src[s.pos]) {
		s.pos++
	}
	if fresh {
		s.keyword(string(s.src[start:s.pos]))
	}
	s.operand = true
}

// keyword handles the first word of a '{' frame or a template directive:
// "for" makes a brace a for expression, where newlines are spaces, and if
// and for directives nest the template they are in until their end.
func (s *scanner) keyword(w string) {
	t := s.top()
	if !t.control {
		if w == "for" {
			t.kind = kGroup
		}
		return
	}
	tmpl := &s.stack[len(s.stack)-2]
	switch w {
	case "if", "for":
		tmpl.extra++
		s.deeper(1)
	case "endif", "endfor":
		if tmpl.extra > 0 {
			tmpl.extra--
			s.depth--
		}
	}
}

// number reads a number: digits, dots and an exponent with its sign.
func (s *scanner) number() {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c >= '0' && c <= '9' || c == '.':
			s.pos++
		case (c == 'e' || c == 'E') && isDigit(s.peek(1)):
			s.pos += 2
		case (c == 'e' || c == 'E') && (s.peek(1) == '+' || s.peek(1) == '-') && isDigit(s.peek(2)):
			s.pos += 3
		default:
			s.operand = true
			return
		}
	}
	s.operand = true
}

func (s *scanner) open(c byte) {
	if c == '[' && s.operand {
		s.bump() // an index or splat nests the expression it follows
	}
	f := frame{kind: kGroup, closer: ']'}
	switch c {
	case '(':
		f.closer = ')'
	case '{':
		f = frame{kind: kBody, closer: '}', fresh: true}
	}
	s.push(f)
	s.pos++
	s.operand = false
}

func (s *scanner) closeGroup(c byte) {
	if s.top().closer == c && len(s.stack) > 1 {
		s.pop()
	}
	s.pos++
	s.operand = true
}

// closeBrace closes the innermost brace or template sequence, and the
// brackets left open inside it, as HCL's scanner does.
func (s *scanner) closeBrace() {
	if s.src[s.pos] == '~' {
		s.pos++
	}
	s.pos++
	s.operand = true
	for i := s.top().brace; i > 0 && len(s.stack) > i; {
		s.pop()
	}
}

func (s *scanner) operator(c byte) {
	next, n, counted := s.peek(1), 1, false
	switch c {
	case '!', '<', '>':
		counted = true
		if next == '=' {
			n = 2
		}
	case '-', '+', '*', '/', '%', '?':
		counted = true
	case '&', '|':
		counted = true
		if next == c {
			n = 2
		}
	case '=':
		switch next {
		case '=':
			counted, n = true, 2
		case '>':
			n = 2
		}
	}
	if counted {
		s.bump()
	}
	s.pos += n
	s.operand = false
}

// heredoc starts a heredoc at "<<EOT" or "<<-EOT" and the end of the line,
// and reports whether there was one.
func (s *scanner) heredoc() bool {
	if s.peek(1) != '<' {
		return false
	}
	marker, next := s.heredocMarker(s.pos + 2)
	if next < 0 {
		return false
	}
	s.push(frame{kind: kHeredoc, marker: marker, lineStart: true})
	s.pos = next
	return true
}

// heredocMarker reads the marker of a heredoc from i, after "<<", and
// returns it with the offset of the next line, or -1 if there is none.
func (s *scanner) heredocMarker(i int) ([]byte, int) {
	if i < len(s.src) && s.src[i] == '-' {
		i++
	}
	start := i
	for i < len(s.src) && (isIdentPart(s.src[i]) || s.src[i] >= utf8.RuneSelf) {
		i++
	}
	if bytes.IndexFunc(s.src[start:i], isNotASCII) >= 0 {
		// Whether HCL takes this for a heredoc depends on its Unicode
		// tables; reading it either way could miss code.
		s.fail(badMarker)
		return nil, -1
	}
	marker := s.src[start:i]
	if i < len(s.src) && s.src[i] == '\r' {
		i++
	}
	if len(marker) == 0 || !isIdentStart(marker[0]) || i >= len(s.src) || s.src[i] != '\n' {
		return nil, -1
	}
	return marker, i + 1
}

// template reads one step of template text.
func (s *scanner) template() {
	t := s.top()
	if t.kind == kHeredoc && t.lineStart {
		t.lineStart = false
		if s.heredocEnd(t.marker) {
			return
		}
	}
	c := s.src[s.pos]
	switch {
	case c == '\n':
		t.lineStart = true
		s.pos++
	case c == '\\' && t.kind == kQuoted:
		s.pos++
		if c := s.peek(0); c != '\n' && c != '\r' && c != 0 {
			s.pos++
		}
	case c == '"' && t.kind == kQuoted:
		s.pos++
		s.pop()
		s.operand = true
	case c == '$' || c == '%':
		s.sequence(c)
	default:
		s.pos++
	}
}

// heredocEnd ends the heredoc if the line at s.pos is its marker: HCL skips
// invalid UTF-8 bytes at the start of the line, then compares the rest
// without surrounding spaces. The newline is left to end the item.
func (s *scanner) heredocEnd(marker []byte) bool {
	i := s.pos
	for i < len(s.src) && ragelRuneLen(s.src[i:]) == 0 {
		i++
	}
	nl := bytes.IndexByte(s.src[i:], '\n')
	if nl < 0 || !bytes.Equal(bytes.TrimSpace(s.src[i:i+nl+1]), marker) {
		return false
	}
	s.pos = i + nl
	if s.src[s.pos-1] == '\r' {
		s.pos--
	}
	s.pop()
	s.operand = true
	return true
}

// sequence handles '$' and '%' in a template: "${" and "%{" start a
// sequence, "$${" and "%%{" are text.
func (s *scanner) sequence(c byte) {
	switch {
	case s.peek(1) == '{':
		s.push(frame{kind: kGroup, closer: '}', control: c == '%', fresh: c == '%'})
		s.pos += 2
		if s.peek(0) == '~' {
			s.pos++
		}
		s.operand = false
	case s.peek(1) == c && s.peek(2) == '{':
		s.pos += 3
	default:
		s.pos++
	}
}

// runJSON reads HCL's JSON syntax: its arrays and objects nest, and each
// string is a template one level deeper.
func (s *scanner) runJSON() {
	for s.pos < len(s.src) && s.at < 0 {
		switch s.src[s.pos] {
		case '{', '[':
			s.push(frame{kind: kGroup})
			s.pos++
		case '}', ']':
			if len(s.stack) > 1 {
				s.pop()
			}
			s.pos++
		case '"':
			s.jsonString()
		default:
			s.pos++
		}
	}
}

func (s *scanner) jsonString() {
	start := s.pos
	raw, end := jsonStringAt(s.src, s.pos)
	s.pos = end
	inner := &scanner{src: unescapeJSON(raw), limit: s.limit, at: -1, depth: s.depth}
	inner.push(frame{kind: kBare})
	inner.deeper(1)
	inner.run()
	s.max = max(s.max, inner.max)
	if inner.at >= 0 {
		s.at, s.why = start, inner.why
	}
}

// jsonStringAt finds the end of the JSON string at start as HCL's JSON
// scanner does: at an unescaped quote or a control character, stepping
// over grapheme clusters, so that a quote or backslash right after a
// Prepend character belongs to it. It returns the raw content and where
// the string ends.
func jsonStringAt(src []byte, start int) ([]byte, int) {
	escaping := false
	for i := start + 1; i < len(src); {
		switch b := src[i]; {
		case b == '\\':
			escaping = !escaping
			i++
		case b == '"':
			i++
			if !escaping {
				return src[start+1 : i-1], i
			}
			escaping = false
		case b < 32:
			return src[start+1 : i], i
		default:
			i += clusterStep(src[i:])
			escaping = false
		}
	}
	return src[start+1:], len(src)
}

// clusterStep is how far HCL's JSON scanner moves from b: one character,
// and the quote or backslash after it when it is a Prepend character.
func clusterStep(b []byte) int {
	r, n := utf8.DecodeRune(b)
	if unicode.Is(prepend, r) && n < len(b) && (b[n] == '"' || b[n] == '\\') {
		n++
	}
	return n
}

// prepend is the Grapheme_Cluster_Break=Prepend property of Unicode 15.0,
// which HCL's JSON scanner (go-textseg/v15) uses.
var prepend = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x600, Hi: 0x605, Stride: 1}, {Lo: 0x6dd, Hi: 0x6dd, Stride: 1},
		{Lo: 0x70f, Hi: 0x70f, Stride: 1}, {Lo: 0x890, Hi: 0x891, Stride: 1},
		{Lo: 0x8e2, Hi: 0x8e2, Stride: 1}, {Lo: 0xd4e, Hi: 0xd4e, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x110bd, Hi: 0x110bd, Stride: 1}, {Lo: 0x110cd, Hi: 0x110cd, Stride: 1},
		{Lo: 0x111c2, Hi: 0x111c3, Stride: 1}, {Lo: 0x1193f, Hi: 0x1193f, Stride: 1},
		{Lo: 0x11941, Hi: 0x11941, Stride: 1}, {Lo: 0x11a3a, Hi: 0x11a3a, Stride: 1},
		{Lo: 0x11a84, Hi: 0x11a89, Stride: 1}, {Lo: 0x11d46, Hi: 0x11d46, Stride: 1},
		{Lo: 0x11f02, Hi: 0x11f02, Stride: 1},
	},
}

// unescapeJSON decodes a JSON string's escapes, which HCL decodes before
// it reads the string as a template: "\u0024{" is an interpolation.
func unescapeJSON(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			out = append(out, raw[i])
			continue
		}
		i++
		out, i = appendEscape(out, raw, i)
	}
	return out
}

// appendEscape appends the character escaped at raw[i] (after the
// backslash) and returns the index of its last byte.
func appendEscape(out, raw []byte, i int) ([]byte, int) {
	switch raw[i] {
	case 'b':
		return append(out, '\b'), i
	case 'f':
		return append(out, '\f'), i
	case 'n':
		return append(out, '\n'), i
	case 'r':
		return append(out, '\r'), i
	case 't':
		return append(out, '\t'), i
	case 'u':
		if r, ok := hex4(raw[i+1:]); ok {
			return utf8.AppendRune(out, r), i + 4
		}
	}
	return append(out, raw[i]), i
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case isDigit(c):
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// ragelRuneLen is the length of the UTF-8 sequence at the start of b as
// HCL's ragel scanner accepts it, or 0 for a byte it takes as invalid.
func ragelRuneLen(b []byte) int {
	n := 0
	switch c := b[0]; {
	case c < 0x80:
		return 1
	case c >= 0xC0 && c <= 0xDF:
		n = 2
	case c >= 0xE0 && c <= 0xEF:
		n = 3
	case c >= 0xF0 && c <= 0xF7:
		n = 4
	default:
		return 0
	}
	if len(b) < n {
		return 0
	}
	for _, c := range b[1:n] {
		if c < 0x80 || c > 0xBF {
			return 0
		}
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentStart is an ASCII identifier start. Identifiers with other
// letters are read as several tokens, which counts more, never less.
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '-' }

func isNotASCII(r rune) bool { return r >= utf8.RuneSelf }
