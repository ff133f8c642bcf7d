package dag_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag"
)

const goodYAML = `name: daily-sales
description: load the day's sales
params:
  dt: $[yyyyMMdd-1]
  out: /data/${dt}
failure_strategy: continue
timeout: 2h
warning: {type: failure, group: data-team}
tasks:
  - name: extract
    type: shell
    script: |
      echo extracting ${dt} into ${out}
      echo '${setValue(rows=42)}'
    outputs: [rows]
    retries: 2
    retry_interval: 30s
    timeout: {after: 10m, action: fail}
  - name: notify
    type: http
    upstream: extract
    method: post
    url: http://127.0.0.1:9/done?rows=${rows}
    outputs: {id: $.data.id}
  - name: check
    type: conditions
    upstream: [extract]
    when: {tasks: [{task: extract, state: success}]}
    success: [good]
    failure: [bad]
  - {name: good, type: shell, upstream: [check], script: echo good}
  - {name: bad, type: shell, upstream: [check], script: echo bad, forbidden: true}
`

func TestParse(t *testing.T) {
	d, err := dag.Parse([]byte(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "daily-sales" || len(d.Tasks) != 5 || d.FailureStrategy != dag.FailureContinue || d.Timeout.Std().Hours() != 2 {
		t.Fatalf("parsed %+v", d)
	}
	ex := d.Tasks[0]
	if ex.Retries != 2 || ex.Timeout.After.Std().Minutes() != 10 || ex.Timeout.Action != dag.TimeoutFail || len(ex.Outputs) != 1 {
		t.Fatalf("extract: %+v", ex)
	}
	warnfail, err := dag.Parse([]byte("name: x\ntasks:\n  - {name: a, type: shell, script: 'true', timeout: {after: 1m, action: warnfail}}\n"))
	if err != nil || warnfail.Tasks[0].Timeout.Action != dag.TimeoutWarnFail {
		t.Fatalf("warnfail: %v, %v", warnfail, err)
	}
	if n := d.Tasks[1]; n.Method != "POST" || n.Upstream[0] != "extract" || n.Outputs["id"] != "$.data.id" {
		t.Fatalf("notify: %+v", n)
	}
	if !d.Tasks[4].Forbidden {
		t.Fatal("bad is not forbidden")
	}
	// JSON is accepted as well.
	if _, err := dag.Parse([]byte(`{"name": "j", "tasks": [{"name": "a", "type": "shell", "script": "true"}]}`)); err != nil {
		t.Fatal(err)
	}
}

// TestParseErrors: each bad definition is refused with the place of what
// is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // in the error, with the line and column
	}{
		{"yaml syntax", "name: x\ntasks: [\n  {name: a", "line 2"},
		{"json syntax", "{\"name\": \"x\",\n \"tasks\": [}", "line 2, column 12"},
		{"unknown field", "name: x\ntasks:\n  - name: a\n    type: shell\n    script: true\n    scirpt: typo\n", "line 6, column 5: tasks[0].scirpt: unknown field of a shell task"},
		{"bad resource", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true', resources: [ok.sh, ../etc/passwd]}\n", "line 3, column 63: tasks[0].resources[1]: \"../etc/passwd\": want a resource's NAME or NAME@VERSION"},
		{"resource version", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true', resources: [a.sh@0]}\n", "line 3, column 56: tasks[0].resources[0]: \"a.sh@0\""},
		{"resource twice", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true', resources: [a.sh@1, a.sh]}\n", "tasks[0].resources[1]: resource \"a.sh\" is named twice"},
		{"udfs on shell", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true', udfs: [f]}\n", "line 3, column 44: tasks[0].udfs: unknown field of a shell task"},
		{"unknown type", "name: x\ntasks:\n  - name: a\n    type: hive\n", "line 4, column 11: tasks[0].type: unknown task type \"hive\""},
		{"missing tasks", "name: x\n", "tasks: missing"},
		{"duplicate", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true'}\n  - {name: a, type: shell, script: 'true'}\n", "line 4, column 12: tasks[1].name: task \"a\" is defined twice"},
		{"unknown upstream", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true', upstream: [b]}\n", "line 3, column 55: tasks[0].upstream[0]: unknown task \"b\""},
		{"cycle", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true', upstream: [c]}\n  - {name: b, type: shell, script: 'true', upstream: [a]}\n  - {name: c, type: shell, script: 'true', upstream: [b]}\n", "cycle"},
		{"bad duration", "name: x\ntimeout: soon\ntasks:\n  - {name: a, type: shell, script: 'true'}\n", "line 2, column 10: timeout: want a duration"},
		{"unknown parameter", "name: x\ntasks:\n  - name: a\n    type: shell\n    script: echo ${nope}\n", "line 5, column 13: tasks[0].script: unknown parameter ${nope}"},
		{"output not upstream", "name: x\ntasks:\n  - {name: a, type: shell, script: 'echo', outputs: [v]}\n  - {name: b, type: shell, script: 'echo ${v}'}\n", "unknown parameter ${v}"},
		{"bad time expression", "name: x\nparams: {d: '$[nonsense(yyyy)]'}\ntasks:\n  - {name: a, type: shell, script: 'true'}\n", "line 2"},
		{"bad jsonpath", "name: x\ntasks:\n  - {name: a, type: http, url: 'http://x', outputs: {v: '$[[['}}\n", "tasks[0].outputs.v"},
		{"branch not downstream", "name: x\ntasks:\n  - {name: a, type: shell, script: 'true'}\n  - {name: c, type: conditions, upstream: [a], when: {tasks: [{task: a, state: success}]}, success: [b]}\n  - {name: b, type: shell, script: 'true'}\n", "must list \"c\" among its upstream"},
		{"bad switch expression", "name: x\ntasks:\n  - {name: s, type: switch, cases: [{when: '1 +', next: b}]}\n  - {name: b, type: shell, script: 'true', upstream: [s]}\n", "tasks[0].cases[0].when"},
		{"bad timeout action", "name: x\ntasks:\n  - name: a\n    type: shell\n    script: 'true'\n    timeout: {after: 1s, action: explode}\n", "line 6, column 34: tasks[0].timeout.action: action \"explode\": want fail, warn or warnfail"},
		{"bad name", "name: 'no spaces'\ntasks:\n  - {name: a, type: shell, script: 'true'}\n", "line 1, column 7: name:"},
		{"bad failure strategy", "name: x\nfailure_strategy: sometimes\ntasks:\n  - {name: a, type: shell, script: 'true'}\n", "line 2, column 19: failure_strategy: \"sometimes\": want end, finish_running or continue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dag.Parse([]byte(tc.text))
			var de *dag.DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("got %v; want a *DefinitionError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q; want it to contain %q", err, tc.want)
			}
			for _, p := range de.Problems {
				if p.Line == 0 && tc.name != "missing tasks" {
					t.Errorf("problem without a line: %+v", p)
				}
			}
		})
	}
}

// TestFailureStrategies: finish_running is a failure strategy besides
// end and continue, in a definition and in a run's options; others are
// refused.
func TestFailureStrategies(t *testing.T) {
	d, err := dag.Parse([]byte("name: x\nfailure_strategy: finish_running\ntasks:\n  - {name: a, type: shell, script: 'true'}\n"))
	if err != nil || d.FailureStrategy != dag.FailureStrategy("finish_running") {
		t.Fatalf("finish_running: %v, %+v", err, d)
	}
	for s, ok := range map[string]bool{"": true, "end": true, "finish_running": true, "continue": true, "sometimes": false} {
		err := dag.RunInput{DAG: "x", FailureStrategy: dag.FailureStrategy(s)}.Check()
		if (err == nil) != ok {
			t.Errorf("failure strategy %q: %v", s, err)
		}
		if !ok && (!errors.Is(err, api.ErrInvalidArgument) || !strings.Contains(err.Error(), "want end, finish_running or continue")) {
			t.Errorf("failure strategy %q: %v; want an invalid argument naming the strategies", s, err)
		}
	}
}
