package dag

import (
	"encoding/json"
	"fmt"
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

// DefinitionError is what is wrong with a definition: every problem found,
// each at its place in the file. It is an api.ErrInvalidArgument.
type DefinitionError = yamldoc.Error

// Parse reads a definition written in YAML or JSON and checks it: its
// fields, its graph (no cycle, no unknown or duplicate task), its task
// types and parameters. What is wrong is a *DefinitionError naming every
// problem's line and column.
func Parse(data []byte) (*Definition, error) {
	root, problem := yamldoc.Parse(data)
	if problem != nil {
		return nil, &DefinitionError{Problems: []Problem{*problem}}
	}
	p := &parser{}
	def := p.definition(root)
	def.pos = p.pos
	if len(p.problems) == 0 {
		p.check(def)
	}
	if len(p.problems) == 0 {
		p.checkUses(def)
	}
	if len(p.problems) > 0 {
		return nil, &DefinitionError{Problems: p.problems}
	}
	return def, nil
}

// parser turns YAML nodes into a Definition, collecting problems with
// their places and keeping the places of the fields the checks need.
type parser struct {
	problems []Problem
	pos      map[string]Pos
}

func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	p.problems = append(p.problems, Problem{Pos: Pos{Line: n.Line, Column: n.Column}, Field: field, Message: fmt.Sprintf(format, args...)})
}

// failAt reports a problem of a field parsed earlier.
func (p *parser) failAt(field, format string, args ...any) {
	p.problems = append(p.problems, Problem{Pos: p.pos[field], Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) mark(n *yaml.Node, field string) {
	if p.pos == nil {
		p.pos = map[string]Pos{}
	}
	p.pos[field] = Pos{Line: n.Line, Column: n.Column}
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
		p.mark(v, field)
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
		if v, err := strconv.Atoi(n.Value); err == nil {
			return v
		}
	}
	p.fail(n, field, "want a whole number, got %s", yamldoc.KindName(n))
	return 0
}

func (p *parser) boolean(n *yaml.Node, field string) bool {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	}
	p.fail(n, field, "want true or false, got %s", yamldoc.KindName(n))
	return false
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

func (p *parser) strings(n *yaml.Node, field string) []string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value} // a single name needs no brackets
	}
	var out []string
	p.each(n, field, "strings", func(e *yaml.Node, f string) { out = append(out, p.str(e, f)) })
	return out
}

// each calls fn for every element of the list n, each with its field path;
// what names an element for the error of a value that is not a list.
func (p *parser) each(n *yaml.Node, field, what string, fn func(e *yaml.Node, f string)) {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "want a list of %s, got %s", what, yamldoc.KindName(n))
		return
	}
	for i, e := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		p.mark(e, f)
		fn(e, f)
	}
}

func (p *parser) stringMap(n *yaml.Node, field string) map[string]string {
	out := map[string]string{}
	p.fields(n, field, func(key string, v *yaml.Node, f string) bool {
		if key == "" {
			p.fail(v, f, "a name may not be empty")
		}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			out[key] = ""
		} else {
			out[key] = p.str(v, f)
		}
		return true
	})
	return out
}

// outputs reads a list of names (shell) or a mapping of names to
// selectors (http, sql).
func (p *parser) outputs(n *yaml.Node, field string) map[string]string {
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		out := map[string]string{}
		for _, name := range p.strings(n, field) {
			out[name] = ""
		}
		return out
	}
	return p.stringMap(n, field)
}

func (p *parser) definition(n *yaml.Node) *Definition {
	d := &Definition{}
	p.fields(n, "", func(key string, v *yaml.Node, f string) bool {
		switch key {
		case "name":
			d.Name = p.str(v, f)
		case "description":
			d.Description = p.str(v, f)
		case "params":
			d.Params = p.stringMap(v, f)
		case "failure_strategy":
			d.FailureStrategy = FailureStrategy(p.str(v, f))
		case "timeout":
			d.Timeout = p.duration(v, f)
		case "warning":
			p.fields(v, f, func(key string, v *yaml.Node, f string) bool {
				switch key {
				case "type":
					d.Warning.Type = WarningType(p.str(v, f))
				case "group":
					d.Warning.Group = p.str(v, f)
				default:
					return false
				}
				return true
			})
		case "worker_group":
			d.WorkerGroup = p.str(v, f)
		case "priority":
			d.Priority = Priority(p.str(v, f))
		case "tenant": // issue 35: tenants
			d.Tenant = p.str(v, f)
		case "tasks":
			p.each(v, f, "tasks", func(e *yaml.Node, f string) { d.Tasks = append(d.Tasks, p.task(e, f)) })
		default:
			return false
		}
		return true
	})
	if _, ok := p.pos["name"]; !ok {
		p.fail(n, "name", "missing")
	}
	if _, ok := p.pos["tasks"]; !ok {
		p.fail(n, "tasks", "missing: a definition has at least one task")
	}
	return d
}

// typeFields are the fields of each task type besides the common ones.
var typeFields = map[TaskType][]string{
	TypeShell:      {"script", "env"},
	TypeHTTP:       {"method", "url", "headers", "body", "expect_status", "body_contains", "body_not_contains"},
	TypeSQL:        {"datasource", "sql", "pre", "post", "query", "udfs"},
	TypeSubProcess: {"dag", "version"},
	TypeConditions: {"when", "success", "failure"},
	TypeSwitch:     {"cases", "default"},
	TypeDependent:  {"depends", "check_interval"},
	TypeStep:       {"step", "queue", "input"},
}

func (p *parser) task(n *yaml.Node, path string) Task {
	t := Task{}
	p.mark(n, path)
	var typeNode *yaml.Node
	specific := map[string]*yaml.Node{}
	p.fields(n, path, func(key string, v *yaml.Node, f string) bool {
		switch key {
		case "name":
			t.Name = p.str(v, f)
		case "type":
			t.Type, typeNode = TaskType(p.str(v, f)), v
		case "description":
			t.Description = p.str(v, f)
		case "upstream":
			t.Upstream = p.strings(v, f)
		case "retries":
			t.Retries = p.integer(v, f)
		case "retry_interval":
			t.RetryInterval = p.duration(v, f)
		case "timeout":
			to := &TaskTimeout{Action: TimeoutFail}
			if v.Kind == yaml.ScalarNode {
				to.After = p.duration(v, f)
			} else {
				p.fields(v, f, func(key string, v *yaml.Node, f string) bool {
					switch key {
					case "after":
						to.After = p.duration(v, f)
					case "action":
						to.Action = TimeoutAction(p.str(v, f))
					default:
						return false
					}
					return true
				})
			}
			t.Timeout = to
		case "priority":
			t.Priority = Priority(p.str(v, f))
		case "worker_group":
			t.WorkerGroup = p.str(v, f)
		case "forbidden":
			t.Forbidden = p.boolean(v, f)
		case "local_params":
			t.LocalParams = p.stringMap(v, f)
		case "outputs":
			t.Outputs = p.outputs(v, f)
		case "resources":
			t.Resources = p.strings(v, f)
		default:
			specific[key] = v
		}
		return true
	})
	if typeNode == nil {
		if n.Kind == yaml.MappingNode {
			p.fail(n, path+".type", "missing: want one of %s", taskTypeList)
		}
		return t
	}
	allowed, known := typeFields[t.Type]
	if !known {
		p.fail(typeNode, path+".type", "unknown task type %q: want one of %s", t.Type, taskTypeList)
		return t
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if specific[k.Value] != v {
			continue
		}
		f := path + "." + k.Value
		if !slices.Contains(allowed, k.Value) {
			p.fail(k, f, "unknown field of a %s task", t.Type)
			continue
		}
		p.taskField(&t, k.Value, v, f)
	}
	return t
}

// taskField sets a field of a task's type.
func (p *parser) taskField(t *Task, key string, v *yaml.Node, f string) {
	switch key {
	case "script":
		t.Script = p.str(v, f)
	case "env":
		t.Env = p.stringMap(v, f)
	case "method":
		t.Method = strings.ToUpper(p.str(v, f))
	case "url":
		t.URL = p.str(v, f)
	case "headers":
		t.Headers = p.stringMap(v, f)
	case "body":
		t.Body = p.str(v, f)
	case "expect_status":
		if v.Kind == yaml.ScalarNode {
			t.ExpectStatus = []int{p.integer(v, f)}
			break
		}
		p.each(v, f, "status codes", func(e *yaml.Node, f string) { t.ExpectStatus = append(t.ExpectStatus, p.integer(e, f)) })
	case "body_contains":
		t.BodyContains = p.str(v, f)
	case "body_not_contains":
		t.BodyNotContains = p.str(v, f)
	case "datasource":
		t.DataSource = p.str(v, f)
	case "sql":
		t.SQL = p.str(v, f)
	case "pre":
		t.Pre = p.strings(v, f)
	case "post":
		t.Post = p.strings(v, f)
	case "query":
		t.Query = p.boolean(v, f)
	case "udfs":
		t.UDFs = p.strings(v, f)
	case "dag":
		t.DAG = p.str(v, f)
	case "version":
		t.Version = int32(p.integer(v, f))
	case "when":
		c := &Condition{Relation: "and"}
		p.fields(v, f, func(key string, v *yaml.Node, f string) bool {
			switch key {
			case "relation":
				c.Relation = p.str(v, f)
			case "tasks":
				p.each(v, f, "{task, state}", func(e *yaml.Node, ef string) {
					var o TaskOutcome
					p.fields(e, ef, func(key string, v *yaml.Node, f string) bool {
						switch key {
						case "task":
							o.Task = p.str(v, f)
						case "state":
							o.State = p.str(v, f)
						default:
							return false
						}
						return true
					})
					c.Tasks = append(c.Tasks, o)
				})
			default:
				return false
			}
			return true
		})
		t.When = c
	case "success":
		t.Success = p.strings(v, f)
	case "failure":
		t.Failure = p.strings(v, f)
	case "cases":
		p.each(v, f, "{when, next}", func(e *yaml.Node, ef string) {
			var c SwitchCase
			p.fields(e, ef, func(key string, v *yaml.Node, f string) bool {
				switch key {
				case "when":
					c.When = p.str(v, f)
				case "next":
					c.Next = p.str(v, f)
				default:
					return false
				}
				return true
			})
			t.Cases = append(t.Cases, c)
		})
	case "default":
		t.Default = p.str(v, f)
	case "depends":
		p.each(v, f, "{dag, task, date}", func(e *yaml.Node, ef string) {
			var d Dependency
			p.fields(e, ef, func(key string, v *yaml.Node, f string) bool {
				switch key {
				case "dag":
					d.DAG = p.str(v, f)
				case "task":
					d.Task = p.str(v, f)
				case "date":
					d.Date = p.str(v, f)
				default:
					return false
				}
				return true
			})
			t.Depends = append(t.Depends, d)
		})
	case "check_interval":
		t.CheckInterval = p.duration(v, f)
	case "step":
		t.Step = p.str(v, f)
	case "queue":
		t.Queue = p.str(v, f)
	case "input":
		var in any
		if err := v.Decode(&in); err != nil {
			p.fail(v, f, "%v", err)
			break
		}
		b, err := json.Marshal(in)
		if err != nil {
			p.fail(v, f, "not expressible as JSON: %v", err)
			break
		}
		t.Input = b
	default: // issue 35: tenants, python, procedure and big-data tasks
		p.taskTypeField(t, key, v, f)
	}
}
