package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAMLDecoder reads the documents of one YAML stream, each checked against a
// Budget before it is returned.
type YAMLDecoder struct {
	data []byte
	dec  *yaml.Decoder
	b    Budget
	err  error // the stream's error, once over its bytes
}

// NewYAMLDecoder returns a Decoder of data within b. A stream over b.Bytes is
// refused before any of it is read: Next returns an *Exceeded with
// LimitBytes.
func NewYAMLDecoder(data []byte, b Budget) *YAMLDecoder {
	d := &YAMLDecoder{data: data, b: b}
	if b.Bytes > 0 && len(data) > b.Bytes {
		d.err = &Exceeded{Limit: LimitBytes, Max: b.Bytes, Size: len(data)}
		return d
	}
	d.dec = yaml.NewDecoder(bytes.NewReader(data))
	return d
}

// Next returns the next document (a yaml.DocumentNode; YAMLRoot gives its
// content). The error is io.EOF after the last document, a *YAMLSyntaxError
// when the text is not YAML, or an *Exceeded when the document is over
// the budget; the document is returned with an *Exceeded, for its line.
func (d *YAMLDecoder) Next() (*yaml.Node, error) {
	if d.err != nil {
		return nil, d.err
	}
	var doc yaml.Node
	if err := d.dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			err = yamlSyntaxError(d.data, err)
		}
		d.err = err
		return nil, err
	}
	if ex := CheckTree(&doc, d.b); ex != nil {
		return &doc, ex
	}
	return &doc, nil
}

// YAMLRoot returns the content of a document, aliases followed; nil when the
// document is empty.
func YAMLRoot(doc *yaml.Node) *yaml.Node {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return Deref(doc.Content[0])
}

// YAMLSyntaxError is a stream that is not YAML.
type YAMLSyntaxError struct {
	// Line is where, counted from 1; 0 when the parser says nothing.
	Line int
	// Msg is the parser's message without its "yaml: line N: " prefix,
	// e.g. "did not find expected key".
	Msg string
}

func (e *YAMLSyntaxError) Error() string {
	if e.Line <= 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

var (
	yamlLine   = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)
	yamlAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// yamlParserErrors start the messages of yaml's parser, as opposed to its
// scanner. yaml reports the parser's lines counting from 0 and the line of
// the construct left unfinished, the scanner's counting from 1.
var yamlParserErrors = []string{
	"did not find expected <",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or",
	"found undefined tag handle",
	"found duplicate %",
	"found incompatible YAML document",
}

// syntaxError turns the decoder's error into a YAMLSyntaxError. A syntax error
// has no node: its line is in the text of yaml's error, the one place the
// host reads a position from a message.
func yamlSyntaxError(data []byte, err error) *YAMLSyntaxError {
	se := &YAMLSyntaxError{Msg: err.Error()}
	if m := yamlLine.FindStringSubmatch(se.Msg); m != nil {
		se.Msg = m[2]
		if m[1] != "" {
			se.Line, _ = strconv.Atoi(m[1])
			if slices.ContainsFunc(yamlParserErrors, func(p string) bool { return strings.HasPrefix(se.Msg, p) }) {
				se.Line++
			}
		}
	}
	if m := yamlAnchor.FindStringSubmatch(se.Msg); m != nil {
		// yaml gives no line for an unknown anchor: find its first use.
		se.Msg = fmt.Sprintf("alias *%s names no anchor; define &%s before using it", m[1], m[1])
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			se.Line = 1 + bytes.Count(data[:i], []byte("\n"))
		}
	}
	return se
}
