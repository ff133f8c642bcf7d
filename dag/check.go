package dag

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"

	"github.com/strandhq/strand/dag/param"
	"github.com/strandhq/strand/dag/task"
)

// zeroTime is the time expressions are checked at.
var zeroTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// validName is what a definition's name may be: it is part of stored
// definition types, workflow ids and file names.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// check finds what is wrong with a parsed definition beyond its fields'
// types: names, references, the graph, each type's required fields and
// the parameters.
func (p *parser) check(d *Definition) {
	if !validName.MatchString(d.Name) {
		p.failAt("name", "%q is not a name: letters, digits, '_', '.' and '-', starting with a letter or digit, at most 100", d.Name)
	}
	switch d.FailureStrategy {
	case "", FailureEnd, FailureContinue, FailureFinishRunning:
	default:
		p.failAt("failure_strategy", "%q: want end, finish_running or continue", d.FailureStrategy)
	}
	switch d.Warning.Type {
	case "", WarnNone:
	case WarnSuccess, WarnFailure, WarnAll:
		if d.Warning.Group == "" {
			p.failAt("warning.type", "warning type %s needs an alert group (warning.group)", d.Warning.Type)
		}
	default:
		p.failAt("warning.type", "%q: want none, success, failure or all", d.Warning.Type)
	}
	p.checkPriority("priority", d.Priority)
	p.checkDefinitionTenant(d) // issue 35: tenants
	if len(d.Tasks) == 0 {
		if _, ok := p.pos["tasks"]; ok {
			p.failAt("tasks", "a definition has at least one task")
		}
		return
	}
	globals := map[string]bool{}
	for name := range param.Builtins(zeroTime) {
		globals[name] = true
	}
	for name, v := range d.Params {
		globals[name] = true
		p.checkTemplate("params."+name, v)
	}

	index := map[string]int{}
	for i, t := range d.Tasks {
		f := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.Name == "":
			p.failAt(f+".name", "missing")
		case !utf8.ValidString(t.Name) || strings.ContainsAny(t.Name, "\x00\n\r\t") || len(t.Name) > 100:
			p.failAt(f+".name", "%q is not a task name: text on one line, at most 100 bytes", t.Name)
		default:
			if j, dup := index[t.Name]; dup {
				p.failAt(f+".name", "task %q is defined twice (first as tasks[%d])", t.Name, j)
				continue
			}
			index[t.Name] = i
		}
	}
	if len(p.problems) > 0 {
		return
	}
	for i, t := range d.Tasks {
		f := fmt.Sprintf("tasks[%d]", i)
		for j, up := range t.Upstream {
			uf := fmt.Sprintf("%s.upstream[%d]", f, j)
			if _, ok := p.pos[uf]; !ok {
				uf = f + ".upstream"
			}
			switch _, ok := index[up]; {
			case up == t.Name:
				p.failAt(uf, "task %q depends on itself", t.Name)
			case !ok:
				p.failAt(uf, "unknown task %q", up)
			}
		}
	}
	if len(p.problems) > 0 {
		return
	}
	if cycle := findCycle(d, index); cycle != nil {
		p.failAt(fmt.Sprintf("tasks[%d].upstream", index[cycle[0]]), "the tasks form a cycle: %s", strings.Join(cycle, " -> "))
		return
	}
	ancestors := ancestorSets(d, index)
	for i := range d.Tasks {
		p.checkTask(d, i, index, ancestors[i], globals)
	}
}

// findCycle returns the names along a cycle of upstream links, the first
// repeated at the end, or nil.
func findCycle(d *Definition, index map[string]int) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(d.Tasks))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = onPath
		path = append(path, d.Tasks[i].Name)
		for _, up := range d.Tasks[i].Upstream {
			j := index[up]
			switch state[j] {
			case onPath:
				start := slices.Index(path, up)
				cycle := append(slices.Clone(path[start:]), up)
				slices.Reverse(cycle) // upstream first
				return cycle
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range d.Tasks {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// ancestorSets returns, for each task, the names of the tasks it depends
// on directly or not.
func ancestorSets(d *Definition, index map[string]int) []map[string]bool {
	out := make([]map[string]bool, len(d.Tasks))
	var walk func(i int) map[string]bool
	walk = func(i int) map[string]bool {
		if out[i] != nil {
			return out[i]
		}
		set := map[string]bool{}
		for _, up := range d.Tasks[i].Upstream {
			set[up] = true
			for a := range walk(index[up]) {
				set[a] = true
			}
		}
		out[i] = set
		return set
	}
	for i := range d.Tasks {
		walk(i)
	}
	return out
}

func (p *parser) checkPriority(field string, pr Priority) {
	if pr != "" && pr.level() == 0 {
		p.failAt(field, "%q: want highest, high, medium, low or lowest", pr)
	}
}

// checkTemplate checks a value's ${} and $[] syntax; names are checked by
// checkNames.
func (p *parser) checkTemplate(field, s string) bool {
	if err := param.Check(s); err != nil {
		p.failAt(field, "%v", err)
		return false
	}
	return true
}

func (p *parser) checkTask(d *Definition, i int, index map[string]int, ancestors map[string]bool, globals map[string]bool) {
	t := &d.Tasks[i]
	f := fmt.Sprintf("tasks[%d]", i)
	need := func(field, value string) {
		if value == "" {
			p.failAt(f, "a %s task needs %s", t.Type, field)
		}
	}
	if t.Retries < 0 || t.Retries > 100 {
		p.failAt(f+".retries", "%d is outside 0..100", t.Retries)
	}
	if t.Timeout != nil {
		if t.Timeout.After <= 0 {
			p.failAt(f+".timeout", "a timeout needs a positive duration (after)")
		}
		switch t.Timeout.Action {
		case TimeoutFail, TimeoutWarn, TimeoutWarnFail:
		default:
			field := f + ".timeout.action"
			if _, ok := p.pos[field]; !ok {
				field = f + ".timeout"
			}
			p.failAt(field, "action %q: want fail, warn or warnfail", t.Timeout.Action)
		}
	}
	p.checkPriority(f+".priority", t.Priority)

	// The names a task's values may use: the global and built-in
	// parameters, its own, and the outputs of the tasks it depends on.
	known := map[string]bool{}
	for n := range globals {
		known[n] = true
	}
	for n, v := range t.LocalParams {
		known[n] = true
		p.checkTemplate(f+".local_params."+n, v)
	}
	for a := range ancestors {
		for n := range d.Tasks[index[a]].Outputs {
			known[n] = true
		}
	}
	templates := map[string]string{}
	for n, v := range t.LocalParams {
		templates["local_params."+n] = v
	}
	downstream := func(field string, names []string) {
		for _, n := range names {
			j, ok := index[n]
			if !ok {
				p.failAt(f+"."+field, "unknown task %q", n)
				continue
			}
			if !slices.Contains(d.Tasks[j].Upstream, t.Name) {
				p.failAt(f+"."+field, "task %q is a branch of %q, so it must list %q among its upstream tasks", n, t.Name, t.Name)
			}
		}
	}

	switch t.Type {
	case TypeShell:
		need("a script", t.Script)
		templates["script"] = shellTemplate(t.Script)
		for k, v := range t.Env {
			templates["env."+k] = v
		}
	case TypeHTTP:
		need("a url", t.URL)
		switch t.Method {
		case "", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS":
		default:
			p.failAt(f+".method", "%q: want GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS", t.Method)
		}
		for _, s := range t.ExpectStatus {
			if s < 100 || s > 599 {
				p.failAt(f+".expect_status", "%d is not an HTTP status", s)
			}
		}
		for n, path := range t.Outputs {
			if err := task.CheckJSONPath(path); err != nil {
				p.failAt(f+".outputs."+n, "%v", err)
			}
		}
		templates["url"], templates["body"] = t.URL, t.Body
		for k, v := range t.Headers {
			templates["headers."+k] = v
		}
	case TypeSQL:
		need("a datasource", t.DataSource)
		need("a statement (sql)", t.SQL)
		templates["sql"] = t.SQL
		for j, s := range t.Pre {
			templates[fmt.Sprintf("pre[%d]", j)] = s
		}
		for j, s := range t.Post {
			templates[fmt.Sprintf("post[%d]", j)] = s
		}
		for n, col := range t.Outputs {
			if col == "" {
				t.Outputs[n] = n // a column of the same name
			}
		}
		if len(t.Outputs) > 0 && !t.Query {
			p.failAt(f+".outputs", "outputs come from a query's first row: set query: true")
		}
	case TypeSubProcess:
		need("a definition to run (dag)", t.DAG)
		if t.DAG == d.Name {
			p.failAt(f+".dag", "a definition may not run itself as a sub-process")
		} else if t.DAG != "" {
			d.refs = append(d.refs, reference{dag: t.DAG, field: f + ".dag", pos: p.pos[f+".dag"], what: "run as a sub-process"})
		}
	case TypeConditions:
		if t.When == nil || len(t.When.Tasks) == 0 {
			p.failAt(f, "a conditions task needs when.tasks: the upstream outcomes it tests")
			break
		}
		if t.When.Relation != "and" && t.When.Relation != "or" {
			p.failAt(f+".when.relation", "%q: want and or or", t.When.Relation)
		}
		for j, o := range t.When.Tasks {
			of := fmt.Sprintf("%s.when.tasks[%d]", f, j)
			if !slices.Contains(t.Upstream, o.Task) {
				p.failAt(of, "task %q is not upstream of %q", o.Task, t.Name)
			}
			if o.State != "success" && o.State != "failure" {
				p.failAt(of, "state %q: want success or failure", o.State)
			}
		}
		if len(t.Success)+len(t.Failure) == 0 {
			p.failAt(f, "a conditions task needs a success or a failure branch")
		}
		downstream("success", t.Success)
		downstream("failure", t.Failure)
	case TypeSwitch:
		if len(t.Cases) == 0 {
			p.failAt(f, "a switch task needs cases")
		}
		for j, c := range t.Cases {
			cf := fmt.Sprintf("%s.cases[%d]", f, j)
			if _, ok := p.pos[cf+".when"]; ok {
				cf += ".when"
			}
			if c.Next == "" {
				p.failAt(cf, "a case needs next: the task it runs")
			}
			if p.checkTemplate(cf, c.When) {
				if err := CheckExpression(c.When); err != nil {
					p.failAt(cf, "%v", err)
				}
				templates[fmt.Sprintf("cases[%d].when", j)] = c.When
			}
			downstream("cases", []string{c.Next})
		}
		if t.Default != "" {
			downstream("default", []string{t.Default})
		}
	case TypeDependent:
		if len(t.Depends) == 0 {
			p.failAt(f, "a dependent task needs depends: the instances it waits for")
		}
		for j, dep := range t.Depends {
			df := fmt.Sprintf("%s.depends[%d]", f, j)
			if dep.DAG == "" {
				p.failAt(df, "a dependency needs a definition (dag)")
			} else if dep.DAG != d.Name {
				field := df + ".dag"
				if _, ok := p.pos[field]; !ok {
					field = df
				}
				d.refs = append(d.refs, reference{dag: dep.DAG, field: field, pos: p.pos[field], what: "depend on"})
			}
			if dep.Date != "" {
				templates[fmt.Sprintf("depends[%d].date", j)] = dep.Date
			}
		}
	case TypeStep:
		need("a step name (step)", t.Step)
	}
	// Issue 35: tenants, queues, python, procedure and big-data tasks.
	p.checkTaskType(d, t, f, templates)
	for field, v := range templates {
		full := f + "." + field
		if _, ok := p.pos[full]; !ok {
			full = f
		}
		if !p.checkTemplate(full, v) {
			continue
		}
		for _, n := range param.Names(v) {
			if !known[n] {
				p.failAt(full, "unknown parameter ${%s}: not a global, built-in or local parameter, nor an output of an upstream task", n)
			}
		}
	}
}

// shellTemplate is a script as a template: DolphinScheduler's
// ${setValue(name=value)}, which the script prints to set an output, is
// text to it, not a parameter.
func shellTemplate(script string) string {
	return strings.ReplaceAll(script, "${setValue(", "$${setValue(")
}

// CheckExpression checks the syntax of a switch case's expression; its
// ${} references are checked as parameters.
func CheckExpression(s string) error {
	placeholder := param.Names(s)
	vars := map[string]string{}
	for _, n := range placeholder {
		vars[n] = "0"
	}
	text, err := param.Expand(s, vars, zeroTime)
	if err != nil {
		return err
	}
	if _, err := expr.Compile(text, expr.AsBool()); err != nil {
		return fmt.Errorf("expression %q: %v", s, firstLine(err.Error()))
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
