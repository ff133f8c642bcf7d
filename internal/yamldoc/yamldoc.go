// Package yamldoc reads definitions written in YAML (or JSON) and says
// where what is wrong in them is: the positions, problems and error that
// the DAG and saga front ends' parsers share.
package yamldoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/strandhq/strand/api"
)

// Pos is a place in a definition's file: line and column count from 1; a
// column of 0 means the parser gave only the line.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column,omitempty"`
}

// String writes p as "line L, column C".
func (p Pos) String() string {
	if p.Column == 0 {
		return fmt.Sprintf("line %d", p.Line)
	}
	return fmt.Sprintf("line %d, column %d", p.Line, p.Column)
}

// NodePos is the place of a YAML node.
func NodePos(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

// Problem is one thing wrong with a definition.
type Problem struct {
	Pos
	// Field is the path of the field ("tasks[2].upstream[0]"), when the
	// problem is a field's.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// String writes the problem with its place and field.
func (p Problem) String() string {
	s := p.Pos.String()
	if p.Line == 0 {
		s = "definition"
	}
	if p.Field != "" {
		s += ": " + p.Field
	}
	return s + ": " + p.Message
}

// Error is what is wrong with a definition: every problem found, each at
// its place in the file. It is an api.ErrInvalidArgument: bad input that
// changed nothing.
type Error struct {
	// What the definition is, for the message ("saga definition"; empty:
	// "definition").
	What string `json:"-"`
	// File names the definition's file, when it has one.
	File     string    `json:"file,omitempty"`
	Problems []Problem `json:"problems"`
}

// Unwrap returns api.ErrInvalidArgument.
func (e *Error) Unwrap() error { return api.ErrInvalidArgument }

// Error lists every problem, each with its place.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	what := e.What
	if what == "" {
		what = "definition"
	}
	b.WriteString("invalid " + what + ": ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Parse reads data, YAML or JSON, into its document's root node. What
// does not parse, or is empty, is the problem returned, at its place.
func Parse(data []byte) (*yaml.Node, *Problem) {
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		// JSON is YAML, but the YAML parser gives only the line of a
		// syntax error: the JSON parser gives the exact place.
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			p := jsonProblem(data, err)
			return nil, &p
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p := yamlProblem(err)
		return nil, &p
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Problem{Pos: Pos{Line: 1, Column: 1}, Message: "the definition is empty"}
	}
	return doc.Content[0], nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlProblem(err error) Problem {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Pos: Pos{Line: line}, Message: m[2]}
	}
	return Problem{Pos: Pos{Line: 1}, Message: strings.TrimPrefix(msg, "yaml: ")}
}

func jsonProblem(data []byte, err error) Problem {
	off := len(data)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = int(se.Offset) - 1 // the offset is past the byte that broke the syntax
	case errors.As(err, &te):
		off = int(te.Offset)
	}
	return Problem{Pos: OffsetPos(data, off), Message: err.Error()}
}

// OffsetPos is the line and column of byte off of data.
func OffsetPos(data []byte, off int) Pos {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - bytes.LastIndexByte(before, '\n')
	return Pos{Line: line, Column: col}
}

// KindName says what node n is, for an error: "a mapping", "a list",
// "nothing", or its value quoted.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}
