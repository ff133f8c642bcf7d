package dag_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strandhq/strand/dag"
)

// TestParseTaskTypes: the task types of issue 35 and tenants are read,
// with the definition's tenant on its tasks that run processes and a
// procedure's OUT arguments as its outputs.
func TestParseTaskTypes(t *testing.T) {
	d, err := dag.Parse([]byte(`name: x
tenant: etl
params: {day: '$[yyyyMMdd]'}
tasks:
  - {name: py, type: python, script: 'print("${day}")', queue: root.adhoc}
  - {name: own, type: shell, tenant: other, script: 'true'}
  - {name: p, type: procedure, datasource: pg, procedure: public.later, args: [{in: '${day}'}, {out: due}]}
  - {name: use, type: shell, upstream: [p], script: 'echo ${due}'}
  - {name: s, type: spark, main_class: M, main_jar: m.jar, deploy_mode: client, driver_memory: 1g, main_args: '${day}'}
  - {name: f, type: flink, program_type: python, main_jar: job.py}
  - {name: m, type: mr, main_class: M, main_jar: m.jar}
  - {name: d, type: datax, job: '{"job": {}}', xmx: 2}
  - {name: q, type: sqoop, mode: import, connect: 'jdbc:mysql://db/x', sql: 'SELECT * FROM t WHERE $CONDITIONS', mappers: 1, target_dir: /x}
  - {name: h, type: http, url: 'http://x'}
`))
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]string{}
	for _, task := range d.Tasks {
		tenants[task.Name] = task.Tenant
	}
	want := map[string]string{"py": "etl", "own": "other", "p": "", "use": "etl", "s": "etl", "f": "etl", "m": "etl", "d": "etl", "q": "etl", "h": ""}
	if fmt.Sprint(tenants) != fmt.Sprint(want) {
		t.Errorf("tenants %v, want %v", tenants, want)
	}
	if p := d.Tasks[2]; len(p.Args) != 2 || *p.Args[0].In != "${day}" || p.Args[1].Out != "due" || fmt.Sprint(p.Outputs) != "map[due:]" {
		t.Errorf("procedure %+v", p)
	}
	if d.Tasks[0].Queue != "root.adhoc" || d.Tasks[4].DeployMode != "client" || d.Tasks[7].Xmx != 2 {
		t.Errorf("fields: %+v", d.Tasks)
	}
}

// TestParseTaskTypeErrors: bad fields of the task types of issue 35 are
// refused with their line and column.
func TestParseTaskTypeErrors(t *testing.T) {
	task := func(fields string) string { return "name: x\ntasks:\n  - name: a\n" + fields }
	for _, tc := range []struct {
		name, text, want string
	}{
		{"spark without a jar", task("    type: spark\n    main_class: M\n"), "line 3, column 5: tasks[0]: a spark task needs the program's jar or file (main_jar)"},
		{"spark deploy mode", task("    type: spark\n    main_class: M\n    main_jar: m.jar\n    deploy_mode: yarn-ish\n"), `line 7, column 18: tasks[0].deploy_mode: "yarn-ish": want cluster, client, local`},
		{"spark memory", task("    type: spark\n    main_class: M\n    main_jar: m.jar\n    executor_memory: lots\n"), `line 7, column 22: tasks[0].executor_memory: "lots" is not a memory size`},
		{"spark cores", task("    type: spark\n    main_class: M\n    main_jar: m.jar\n    driver_cores: -1\n"), `line 7, column 19: tasks[0].driver_cores: -1 is outside 0..100000`},
		{"flink without a class", task("    type: flink\n    main_jar: f.jar\n"), "line 3, column 5: tasks[0]: a flink task needs a main class (main_class)"},
		{"flink deploy mode", task("    type: flink\n    main_class: M\n    main_jar: f.jar\n    deploy_mode: client\n"), `line 7, column 18: tasks[0].deploy_mode: "client": want cluster, local`},
		{"mr program type", task("    type: mr\n    main_class: M\n    main_jar: m.jar\n    program_type: scala\n"), `line 7, column 19: tasks[0].program_type: "scala": want java, python`},
		{"datax not JSON", task("    type: datax\n    job: '{nope'\n"), "line 5, column 10: tasks[0].job: the job is not JSON"},
		{"sqoop mode", task("    type: sqoop\n    mode: sideways\n    connect: jdbc:x\n"), `line 5, column 11: tasks[0].mode: "sideways": want import, export`},
		{"sqoop query", task("    type: sqoop\n    mode: import\n    connect: jdbc:x\n    sql: SELECT 1\n    mappers: 1\n    target_dir: /x\n"), "line 7, column 10: tasks[0].sql: a sqoop import's query needs $CONDITIONS"},
		{"sqoop export fields", task("    type: sqoop\n    mode: export\n    connect: jdbc:x\n    table: t\n    export_dir: /x\n    where: a > 1\n"), "line 9, column 12: tasks[0].where: only an import has where"},
		{"procedure name", task("    type: procedure\n    datasource: pg\n    procedure: 'p; drop table x'\n"), `line 6, column 16: tasks[0].procedure: "p; drop table x" is not a procedure's name`},
		{"procedure argument", task("    type: procedure\n    datasource: pg\n    procedure: p\n    args: [{in: 1, out: x}]\n"), "line 7, column 12: tasks[0].args[0]: an argument is either {in: VALUE} or {out: NAME}"},
		{"procedure outputs", task("    type: procedure\n    datasource: pg\n    procedure: p\n    outputs: [x]\n"), "line 7, column 14: tasks[0].outputs: a procedure task's outputs are its out arguments"},
		{"python without a script", task("    type: python\n"), "a python task needs a script (script)"},
		{"tenant of an http task", task("    type: http\n    url: http://x\n    tenant: etl\n"), "line 6, column 5: tasks[0].tenant: unknown field of a http task"},
		{"tenant name", task("    type: shell\n    script: 'true'\n    tenant: 'no such'\n"), `line 6, column 13: tasks[0].tenant: "no such" is not a tenant name`},
		{"definition tenant name", "name: x\ntenant: 'a b'\ntasks:\n  - {name: a, type: shell, script: 'true'}\n", `line 2, column 9: tenant: "a b" is not a tenant name`},
		{"queue", task("    type: shell\n    script: 'true'\n    queue: 'a queue'\n"), `line 6, column 12: tasks[0].queue: "a queue" is not a queue name`},
		{"unknown parameter in main_args", task("    type: mr\n    main_class: M\n    main_jar: m.jar\n    main_args: '${nope}'\n"), "line 7, column 16: tasks[0].main_args: unknown parameter ${nope}"},
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
		})
	}
}
