package admission

import (
	"bytes"
	"encoding/json"
	"strings"
)

// A review's size in bytes says little of what decoding it costs: 7 MiB of
// "{}," is 2.4 million values, each a Go struct, map or interface once
// decoded, and hundreds of bytes of heap apiece. So one pass over the body,
// before any of it is decoded, finds what it would become (shape): how many
// JSON values it holds, leaving out the metadata.managedFields of its object
// and old object, which Review drops before it decodes them (stripObject).
// No module needs them (they are the API server's record of field
// ownership), a real object of a few KiB can carry many of them, and a
// hostile one can be nothing else.
//
// The pass allocates nothing but the list of spans to drop: it is told the
// body is valid JSON (json.Valid, also allocation-free, runs first), keeps
// track of where it is only along the path request.{object,oldObject}.
// metadata, and skips everything else a byte at a time.

// shape is what a review's body would become.
type shape struct {
	counts
	// drops are the [start, end) byte spans to cut: each managedFields
	// member of request.object.metadata and request.oldObject.metadata
	// (of metadata, for an object), with one comma beside it.
	drops [][2]int
}

// scanReview returns the shape of body, which must be valid JSON.
func scanReview(body []byte) shape { return scan(body, levelRoot) }

func scan(b []byte, l level) shape {
	s := scanner{b: b}
	s.skipSpace()
	s.value(l)
	return shape{counts: s.seen.minus(s.dropped), drops: s.drops}
}

// stripObject returns the JSON object raw without its
// metadata.managedFields; raw itself when it has none or is not valid JSON
// (decoding it then fails as it would have).
func stripObject(raw []byte) []byte {
	if len(raw) == 0 || !json.Valid(raw) {
		return raw
	}
	return scan(raw, levelObject).stripped(raw)
}

// stripped returns body without sh's drops; body itself when there are none.
func (sh shape) stripped(body []byte) []byte {
	if len(sh.drops) == 0 {
		return body
	}
	n := len(body)
	for _, d := range sh.drops {
		n -= d[1] - d[0]
	}
	out := make([]byte, 0, n)
	at := 0
	for _, d := range sh.drops {
		out = append(out, body[at:d[0]]...)
		at = d[1]
	}
	return append(out, body[at:]...)
}

// level is where the scanner is along the one path it follows.
type level int

const (
	levelRoot     level = iota // the AdmissionReview
	levelRequest               // .request
	levelObject                // .request.object or .request.oldObject
	levelMetadata              // .object.metadata
	levelOther                 // anywhere else: skipped
)

// member is the level a member named key of an object at l is at, and
// whether it is one to drop. Keys are compared as encoding/json matches a
// struct's fields: unescaped, and regardless of case.
func (l level) member(key string) (next level, drop bool) {
	switch {
	case l == levelRoot && strings.EqualFold(key, "request"):
		return levelRequest, false
	case l == levelRequest && (strings.EqualFold(key, "object") || strings.EqualFold(key, "oldObject")):
		return levelObject, false
	case l == levelObject && strings.EqualFold(key, "metadata"):
		return levelMetadata, false
	case l == levelMetadata && strings.EqualFold(key, "managedFields"):
		return levelOther, true
	}
	return levelOther, false
}

// counts are what decoding a JSON document costs (decodeCost).
type counts struct {
	// values are the document's values: the top-level one, every array
	// element and every object member.
	values int64
	// elementObjects are the values that are objects in an array: the ones
	// that decode to a struct of a slice, which may be a kilobyte (a
	// container, a claim template) from as little as "{},".
	elementObjects int64
}

func (c counts) minus(d counts) counts {
	return counts{values: c.values - d.values, elementObjects: c.elementObjects - d.elementObjects}
}

type scanner struct {
	b       []byte
	i       int
	seen    counts // dropped values included
	dropped counts
	drops   [][2]int
}

// value reads the value at s.i, at level l.
func (s *scanner) value(l level) {
	s.seen.values++
	if s.i >= len(s.b) {
		return
	}
	if l == levelOther || s.b[s.i] != '{' {
		s.skip()
		return
	}
	s.i++ // {
	s.skipSpace()
	if s.at('}') {
		s.i++
		return
	}
	kept := 0   // members not dropped so far
	comma := -1 // where the comma before this member is
	for s.i < len(s.b) {
		memberStart := s.i
		key := s.key()
		s.skipSpace()
		s.i++ // :
		s.skipSpace()
		next, drop := l.member(key)
		before := s.seen
		s.value(next)
		memberEnd := s.i
		s.skipSpace()
		if drop {
			s.drop(memberStart, memberEnd, comma, kept == 0)
			d := s.seen.minus(before)
			s.dropped.values += d.values
			s.dropped.elementObjects += d.elementObjects
		} else {
			kept++
		}
		if s.at(',') {
			comma = s.i
			s.i++
			s.skipSpace()
			continue
		}
		s.i++ // }
		return
	}
}

// drop records the member at [start, end) as a span to cut, with one comma:
// the one before it when a member before it is kept (at comma), else the
// one after it, if any, with the space after that.
func (s *scanner) drop(start, end, comma int, first bool) {
	if !first {
		start = comma
	} else if s.at(',') {
		end = s.i + 1
		for end < len(s.b) && isSpace(s.b[end]) {
			end++
		}
	}
	s.drops = append(s.drops, [2]int{start, end})
}

// key reads an object member's name, unescaped only when it has escapes.
func (s *scanner) key() string {
	start := s.i
	s.skipString()
	raw := s.b[start:s.i]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return ""
	}
	return k
}

// skip skips the value at s.i, counting the values inside it: an array's
// elements and an object's members, one each. A member's key and value are
// one value: they become one map entry or field. An object is an array's
// element when what comes before it is [ or , (a member's value follows a
// colon, and a comma in an object is followed by a key).
func (s *scanner) skip() {
	depth := 0
	var prev byte // the last byte that is not space, outside strings
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch c {
		case '"':
			s.skipString()
			prev = '"'
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			if c == '{' && (prev == '[' || prev == ',') {
				s.seen.elementObjects++
			}
			depth++
			s.i++
			s.skipSpace()
			prev = c
			if s.i < len(s.b) && s.b[s.i] != '}' && s.b[s.i] != ']' {
				s.seen.values++ // the first element or member
			}
			continue
		case '}', ']':
			depth--
			s.i++
			prev = c
			if depth == 0 {
				return
			}
			continue
		case ',':
			s.seen.values++
		default:
			if isSpace(c) {
				s.i++
				continue
			}
			if depth == 0 {
				s.skipScalar()
				return
			}
		}
		prev = c
		s.i++
	}
}

func (s *scanner) skipString() {
	s.i++ // "
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			return
		}
		s.i++
	}
}

// skipScalar skips a number, true, false or null.
func (s *scanner) skipScalar() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return
		}
		s.i++
	}
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

func (s *scanner) at(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
