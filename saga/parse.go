package saga

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/strandhq/strand/internal/yamldoc"
)

// Pos is a place in a definition's file.
type Pos = yamldoc.Pos

// Problem is one thing wrong with a definition.
type Problem = yamldoc.Problem

// DefinitionError is what is wrong with a saga definition: every problem
// found, each at its place in the file. It is an api.ErrInvalidArgument.
type DefinitionError = yamldoc.Error

// Parse reads a saga definition written in YAML (or JSON) and checks it:
// its fields, its step names (unique), its calls (methods, URLs, status
// lists) and every ${…} reference (to the input, to earlier steps'
// answers and, in a compensation, to the forward call's answer). What is
// wrong is a *DefinitionError naming each problem's line and column.
func Parse(data []byte) (*Definition, error) {
	root, problem := yamldoc.Parse(data)
	if problem != nil {
		return nil, &DefinitionError{What: "saga definition", Problems: []Problem{*problem}}
	}
	p := &parser{nodes: map[string]*yaml.Node{}}
	def := p.definition(root)
	// The checks run even when fields are wrong, so that every problem is
	// reported at once; they pass over a field already reported.
	p.check(def)
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, &DefinitionError{What: "saga definition", Problems: p.problems}
	}
	return def, nil
}

// site is a template of the definition, checked once every step's name
// is known.
type site struct {
	node  *yaml.Node
	field string
	text  string
	// stage is the index of the step's element in steps; step is its
	// name; compensation says the template is its compensation's.
	stage        int
	step         string
	compensation bool
	// url says the template is a call's URL.
	url bool
}

// parser turns YAML nodes into a Definition, collecting problems with
// their places and the nodes of the fields the checks need.
type parser struct {
	problems []Problem
	nodes    map[string]*yaml.Node
	sites    []site
}

func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	p.problems = append(p.problems, Problem{Pos: Pos{Line: n.Line, Column: n.Column}, Field: field, Message: fmt.Sprintf(format, args...)})
}

// failAt reports a problem of a field parsed earlier.
func (p *parser) failAt(field, format string, args ...any) {
	var pos Pos
	if n := p.nodes[field]; n != nil {
		pos = Pos{Line: n.Line, Column: n.Column}
	}
	p.problems = append(p.problems, Problem{Pos: pos, Field: field, Message: fmt.Sprintf(format, args...)})
}

// reported says whether a problem of field was reported already.
func (p *parser) reported(field string) bool {
	return slices.ContainsFunc(p.problems, func(pr Problem) bool { return pr.Field == field })
}

// fields calls set for each key of mapping n; set reports whether it
// knows the key.
func (p *parser) fields(n *yaml.Node, path string, set func(key string, v *yaml.Node, field string) bool) {
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "want a mapping of fields, got %s", yamldoc.KindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := k.Value
		if path != "" {
			field = path + "." + k.Value
		}
		if seen[k.Value] {
			p.fail(k, field, "given twice")
			continue
		}
		seen[k.Value] = true
		p.nodes[field] = v
		if !set(k.Value, v, field) {
			p.fail(k, field, "unknown field")
		}
	}
}

func (p *parser) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, field, "want a string, got %s", yamldoc.KindName(n))
		return ""
	}
	return n.Value
}

func (p *parser) integer(n *yaml.Node, field string) int {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.ParseInt(n.Value, 0, 32); err == nil {
			return int(v)
		}
	}
	p.fail(n, field, "want a whole number, got %s", yamldoc.KindName(n))
	return 0
}

func (p *parser) duration(n *yaml.Node, field string) Duration {
	var d Duration
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, field, "want a duration such as 90s or 1h30m, got %s", yamldoc.KindName(n))
	} else if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		p.fail(n, field, "%v", err)
	}
	return d
}

// each calls fn for every element of the list n, each with its field
// path; what names an element for the error of a value that is not a
// list.
func (p *parser) each(n *yaml.Node, field, what string, fn func(e *yaml.Node, f string)) {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "want a list of %s, got %s", what, yamldoc.KindName(n))
		return
	}
	for i, e := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		p.nodes[f] = e
		fn(e, f)
	}
}

func (p *parser) definition(n *yaml.Node) *Definition {
	d := &Definition{}
	p.fields(n, "", func(key string, v *yaml.Node, f string) bool {
		switch key {
		case "name":
			d.Name = p.str(v, f)
		case "description":
			d.Description = p.str(v, f)
		case "options":
			p.options(v, f, &d.Options)
		case "steps":
			stage := 0
			p.each(v, f, "steps", func(e *yaml.Node, f string) {
				d.Steps = append(d.Steps, p.element(e, f, stage))
				stage++
			})
		default:
			return false
		}
		return true
	})
	if n.Kind == yaml.MappingNode {
		if _, ok := p.nodes["name"]; !ok {
			p.fail(n, "name", "missing")
		}
		if _, ok := p.nodes["steps"]; !ok {
			p.fail(n, "steps", "missing: a saga has at least one step")
		}
	}
	return d
}

func (p *parser) options(n *yaml.Node, path string, o *DefinitionOptions) {
	p.fields(n, path, func(key string, v *yaml.Node, f string) bool {
		switch key {
		case "retry":
			o.Retry = p.retry(v, f, true)
		case "compensation_retry":
			o.CompensationRetry = p.retry(v, f, false)
		case "timeout":
			before := len(p.problems)
			o.Timeout = p.duration(v, f)
			if o.Timeout == 0 && len(p.problems) == before {
				p.fail(v, f, "a timeout of 0 would fail every call: leave it out for the default (%s)", DefaultTimeout)
			}
		case "worker_group":
			o.WorkerGroup = p.str(v, f)
		default:
			return false
		}
		return true
	})
}

func (p *parser) retry(n *yaml.Node, path string, forward bool) RetrySpec {
	var r RetrySpec
	p.fields(n, path, func(key string, v *yaml.Node, f string) bool {
		switch key {
		case "backoff":
			r.Backoff = p.duration(v, f)
		case "max_backoff":
			r.MaxBackoff = p.duration(v, f)
		case "attempts":
			a := p.integer(v, f)
			if a < 0 {
				p.fail(v, f, "want 0 (no limit but the deadline) or more, got %d", a)
			}
			r.Attempts = int32(a)
		case "deadline":
			if !forward {
				p.fail(v, f, "a compensation has no deadline: it is tried attempts times, then the saga waits for an operator")
				return true
			}
			r.Deadline = p.duration(v, f)
		default:
			return false
		}
		return true
	})
	if r.MaxBackoff > 0 && r.Backoff > r.MaxBackoff {
		p.failAt(path+".max_backoff", "max_backoff %s is shorter than backoff %s", r.MaxBackoff.Std(), r.Backoff.Std())
	}
	return r
}

// element reads an element of steps: a step, or {parallel: [steps]}.
func (p *parser) element(n *yaml.Node, path string, stage int) StepSpec {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value != "parallel" {
				continue
			}
			var g StepSpec
			for j := 0; j+1 < len(n.Content); j += 2 {
				if k := n.Content[j]; k.Value != "parallel" {
					p.fail(k, path+"."+k.Value, "a parallel group has nothing but parallel: its steps")
				}
			}
			v, f := n.Content[i+1], path+".parallel"
			p.nodes[f] = v
			p.each(v, f, "steps", func(e *yaml.Node, f string) {
				if e.Kind == yaml.MappingNode && slices.ContainsFunc(e.Content, func(k *yaml.Node) bool { return k.Value == "parallel" }) {
					p.fail(e, f, "a parallel group may not hold another")
					return
				}
				g.Parallel = append(g.Parallel, p.step(e, f, stage))
			})
			if v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				p.fail(v, f, "a parallel group has at least one step")
			}
			if g.Parallel == nil {
				g.Parallel = []StepSpec{}
			}
			return g
		}
	}
	return p.step(n, path, stage)
}

func (p *parser) step(n *yaml.Node, path string, stage int) StepSpec {
	var s StepSpec
	var callNode, compNode *yaml.Node
	p.fields(n, path, func(key string, v *yaml.Node, f string) bool {
		switch key {
		case "name":
			s.Name = p.str(v, f)
		case "call":
			callNode = v
		case "compensate":
			compNode = v
		default:
			return false
		}
		return true
	})
	if n.Kind != yaml.MappingNode {
		return s
	}
	if _, ok := p.nodes[path+".name"]; !ok {
		p.fail(n, path+".name", "missing: every step has a name")
	}
	if callNode == nil {
		p.fail(n, path+".call", "missing: a step makes an HTTP call")
	} else {
		s.Call = p.call(callNode, path+".call", site{stage: stage, step: s.Name})
	}
	if compNode != nil {
		s.Compensate = p.call(compNode, path+".compensate", site{stage: stage, step: s.Name, compensation: true})
	}
	return s
}

// Methods are the HTTP methods a call may use.
var Methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// reservedHeaders are set by Strand on every call.
var reservedHeaders = []string{"Idempotency-Key", "X-Strand-Transaction"}

func (p *parser) call(n *yaml.Node, path string, at site) *Call {
	c := &Call{}
	var success, retryable bool
	p.fields(n, path, func(key string, v *yaml.Node, f string) bool {
		s := at
		s.node, s.field = v, f
		switch key {
		case "method":
			c.Method = strings.ToUpper(p.str(v, f))
			if c.Method != "" && !slices.Contains(Methods, c.Method) {
				p.fail(v, f, "unknown method %q: want one of %s", v.Value, strings.Join(Methods, ", "))
			}
		case "url":
			c.URL = p.str(v, f)
			s.text, s.url = c.URL, true
			p.sites = append(p.sites, s)
		case "headers":
			c.Headers = map[string]string{}
			p.fields(v, f, func(key string, v *yaml.Node, f string) bool {
				switch {
				case !validHeaderName(key):
					p.fail(v, f, "%q is not a header name", key)
				case slices.ContainsFunc(reservedHeaders, func(h string) bool { return strings.EqualFold(h, key) }):
					p.fail(v, f, "%s is set by Strand on every call: it is the same for every attempt of a step", key)
				}
				c.Headers[key] = p.str(v, f)
				hs := at
				hs.node, hs.field, hs.text = v, f, c.Headers[key]
				p.sites = append(p.sites, hs)
				return true
			})
		case "body":
			c.Body = p.body(v, f, at)
		case "success":
			success = true
			c.Success = p.statuses(v, f, false)
		case "retryable":
			retryable = true
			c.Retryable = p.statuses(v, f, true)
		default:
			return false
		}
		return true
	})
	if n.Kind != yaml.MappingNode {
		return c
	}
	if _, ok := p.nodes[path+".method"]; !ok {
		p.fail(n, path+".method", "missing: want one of %s", strings.Join(Methods, ", "))
	}
	if _, ok := p.nodes[path+".url"]; !ok {
		p.fail(n, path+".url", "missing")
	}
	if !success {
		c.Success = slices.Clone(DefaultSuccess)
	}
	if !retryable {
		c.Retryable = slices.Clone(DefaultRetryable)
	}
	// A status is in one class at most.
	for status := 100; status <= 599; status++ {
		if matchStatus(c.Success, status) && matchStatus(c.Retryable, status) {
			field := path + ".retryable"
			if !retryable {
				field = path + ".success"
			}
			p.failAt(field, "status %d is both a success and retryable", status)
			break
		}
	}
	return c
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// body reads a call's body: a string is a text template; a mapping or a
// list is a JSON body whose strings are templates.
func (p *parser) body(n *yaml.Node, f string, at site) json.RawMessage {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		s := at
		s.node, s.field, s.text = n, f, n.Value
		p.sites = append(p.sites, s)
		b, _ := json.Marshal(n.Value)
		return b
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	var walk func(n *yaml.Node, f string)
	walk = func(n *yaml.Node, f string) {
		switch n.Kind {
		case yaml.ScalarNode:
			if n.Tag == "!!str" {
				s := at
				s.node, s.field, s.text = n, f, n.Value
				p.sites = append(p.sites, s)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], f+"."+n.Content[i].Value)
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				walk(e, fmt.Sprintf("%s[%d]", f, i))
			}
		case yaml.AliasNode:
			if n.Alias != nil {
				walk(n.Alias, f)
			}
		}
	}
	walk(n, f)
	var v any
	if err := n.Decode(&v); err != nil {
		p.fail(n, f, "%v", err)
		return nil
	}
	b, err := marshal(v)
	if err != nil {
		p.fail(n, f, "not expressible as JSON (keys are text): %v", err)
		return nil
	}
	return b
}

// statuses reads a list of status specs (or one); connection is allowed
// in a retryable list.
func (p *parser) statuses(n *yaml.Node, f string, retryable bool) []StatusRange {
	out := []StatusRange{}
	one := func(e *yaml.Node, f string) {
		if e.Kind != yaml.ScalarNode || e.Tag == "!!null" {
			p.fail(e, f, "want a status (404), a class (5xx), a range (500-504)%s, got %s", map[bool]string{true: " or connection"}[retryable], yamldoc.KindName(e))
			return
		}
		r, err := ParseStatusRange(e.Value)
		switch {
		case err != nil:
			p.fail(e, f, "%v", err)
		case r == Connection && !retryable:
			p.fail(e, f, "connection (no answer) may be retryable, never a success")
		default:
			out = append(out, r)
		}
	}
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		one(n, f)
		return out
	}
	p.each(n, f, "statuses", one)
	return out
}

// validName is what a saga's name may be: it is part of stored
// definition types and workflow ids.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// validStepName is what a step's name may be: it is part of references
// (${steps.NAME.body}), idempotency keys and labels.
var validStepName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// validGroup is what a worker group may be named.
var validGroup = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// check finds what is wrong with a parsed definition beyond its fields'
// types: names, templates and what their references name.
func (p *parser) check(d *Definition) {
	if _, ok := p.nodes["name"]; ok && !p.reported("name") && !validName.MatchString(d.Name) {
		p.failAt("name", "%q is not a name: letters, digits, '_', '.' and '-', starting with a letter or digit, at most 100", d.Name)
	}
	if g := d.Options.WorkerGroup; g != "" && !p.reported("options.worker_group") && !validGroup.MatchString(g) {
		p.failAt("options.worker_group", "%q is not a worker group: letters, digits, '_', '.' and '-', at most 100", g)
	}
	if len(d.Steps) == 0 {
		if n := p.nodes["steps"]; n != nil && !p.reported("steps") && n.Kind == yaml.SequenceNode {
			p.failAt("steps", "a saga has at least one step")
		}
		return
	}
	// stageOf is each step's element in steps.
	stageOf := map[string]int{}
	for i, e := range d.Steps {
		steps, path := []StepSpec{e}, fmt.Sprintf("steps[%d]", i)
		if e.Parallel != nil {
			steps, path = e.Parallel, path+".parallel"
		}
		for j, s := range steps {
			f := path + ".name"
			if e.Parallel != nil {
				f = fmt.Sprintf("%s[%d].name", path, j)
			}
			switch {
			case s.Name == "":
			case !validStepName.MatchString(s.Name):
				p.failAt(f, "%q is not a step name: letters, digits, '_' and '-', starting with a letter or digit, at most 100", s.Name)
				fallthrough // its references are checked as the name reads
			default:
				if _, dup := stageOf[s.Name]; dup {
					p.failAt(f, "step %q is defined twice: step names are unique in a saga", s.Name)
					continue
				}
				stageOf[s.Name] = i
			}
		}
	}
	for _, s := range p.sites {
		if !p.reported(s.field) {
			p.checkSite(s, stageOf)
		}
	}
}

// checkSite checks a template: its syntax, what its references name, and
// (a URL) that it is an absolute http or https URL.
func (p *parser) checkSite(s site, stageOf map[string]int) {
	segs, err := parseTemplate(s.text)
	var te *templateError
	if errors.As(err, &te) {
		p.problems = append(p.problems, Problem{Pos: p.offsetPos(s.node, te.off), Field: s.field, Message: te.msg})
		return
	}
	for _, sg := range segs {
		r := sg.ref
		if r == nil {
			continue
		}
		if msg := refProblem(r, s, stageOf); msg != "" {
			p.problems = append(p.problems, Problem{Pos: p.offsetPos(s.node, r.off), Field: s.field, Message: msg})
		}
	}
	if s.url {
		switch {
		case len(segs) > 0 && segs[0].ref != nil:
			// A base URL from the input or an answer: checked once rendered.
		default:
			// Each value is percent-encoded: a placeholder stands for it.
			var b strings.Builder
			for _, sg := range segs {
				if sg.ref != nil {
					b.WriteString("x")
				} else {
					b.WriteString(sg.text)
				}
			}
			if err := checkURL(b.String()); err != nil {
				p.fail(s.node, s.field, "%v", err)
			}
		}
	}
}

// refProblem says what is wrong with a reference of template s, or "".
func refProblem(r *ref, s site, stageOf map[string]int) string {
	switch r.root {
	case refInput:
		return ""
	case refResult:
		if !s.compensation {
			return fmt.Sprintf("${%s}: ${result…} is the answer of the call a compensation undoes: only a compensation reads it (an earlier step's answer is ${steps.NAME…})", r.raw)
		}
		if err := checkAnswerPath("result", r.path); err != nil {
			return fmt.Sprintf("${%s}: %v", r.raw, err)
		}
		return ""
	}
	stage, ok := stageOf[r.step]
	switch {
	case !ok:
		return fmt.Sprintf("${%s}: unknown step %q", r.raw, r.step)
	case r.step == s.step && s.compensation:
		return fmt.Sprintf("${%s}: a compensation reads its own step's answer as ${result…}", r.raw)
	case r.step == s.step:
		return fmt.Sprintf("${%s}: a step cannot read its own answer", r.raw)
	case stage == s.stage:
		return fmt.Sprintf("${%s}: step %q runs at the same time as %q (the same parallel group): a step reads only earlier steps' answers", r.raw, r.step, s.step)
	case stage > s.stage:
		return fmt.Sprintf("${%s}: step %q runs after %q: a step reads only earlier steps' answers", r.raw, r.step, s.step)
	}
	if err := checkAnswerPath("steps."+r.step, r.path); err != nil {
		return fmt.Sprintf("${%s}: %v", r.raw, err)
	}
	return ""
}

// offsetPos is the place of byte off of scalar n's value: exact for a
// plain or quoted scalar on one line without escapes, the value's start
// otherwise.
func (p *parser) offsetPos(n *yaml.Node, off int) Pos {
	pos := Pos{Line: n.Line, Column: n.Column}
	if strings.Contains(n.Value, "\n") {
		return pos
	}
	switch n.Style {
	case 0, yaml.FlowStyle:
		pos.Column += off
	case yaml.SingleQuotedStyle:
		if !strings.Contains(n.Value, "'") {
			pos.Column += off + 1
		}
	case yaml.DoubleQuotedStyle:
		if !strings.ContainsAny(n.Value, `"\`) {
			pos.Column += off + 1
		}
	}
	return pos
}
