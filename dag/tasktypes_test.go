package dag_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/strandhq/strand/dag"
	"github.com/strandhq/strand/internal/testdb"
)

// bracketed is what a stand-in tool prints of its arguments: each in
// brackets on a line.
func bracketed(words ...string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString("[" + w + "]\n")
	}
	return b.String()
}

// tenantsAndTaskTypes: one DAG of the task types of issue 35, on a worker
// allowed to run as tenant t1 (OS user nobody): a shell and a python task
// run as nobody with the tenant's queue; spark, flink, mr, datax and sqoop
// tasks run their tools (stand-ins that print their arguments) with the
// command lines built from their fields, parameters expanded; a procedure
// task calls a stored procedure on PostgreSQL (with STRAND_TEST_POSTGRES)
// and a task downstream uses its OUT value.
func tenantsAndTaskTypes(t *testing.T, e *env) {
	if os.Geteuid() != 0 {
		t.Skip("running tasks as a tenant's OS user needs root")
	}
	// What nobody runs must be reachable by nobody: not under the test's
	// private temporary directory.
	tools, err := os.MkdirTemp("", "strand-tasktypes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tools) })
	if err := os.Chmod(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	standIn := "#!/bin/bash\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"
	for _, name := range []string{"spark-submit", "flink", "hadoop", "sqoop"} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(standIn), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	datax := filepath.Join(tools, "datax.py")
	os.WriteFile(datax, []byte("import sys\nfor a in sys.argv:\n    print('[%s]' % a)\nprint(open(sys.argv[-1]).read(), end='')\n"), 0o644)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3 (the python tasks run as nobody)")
	}
	if _, err := e.client.Catalog.CreateTenant(e.ctx, dag.Tenant{Name: "t1", User: "nobody", Queue: "root.t1"}, "test"); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--group", "tasktypes", "--workdir", tools, "--tenant", "t1", "--python", python, "--datax", datax,
		"--spark-submit", filepath.Join(tools, "spark-submit"), "--flink", filepath.Join(tools, "flink"),
		"--hadoop", filepath.Join(tools, "hadoop"), "--sqoop", filepath.Join(tools, "sqoop")}

	procedure := ""
	if os.Getenv(testdb.PostgresEnv) != "" {
		base := testdb.PostgresURL(t)
		url := testdb.WithSearchPath(t, base, testdb.NewSchema(t, base))
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(e.ctx, `CREATE PROCEDURE later(IN day text, IN n int, OUT due text)
LANGUAGE plpgsql AS $$ BEGIN due := to_char(to_date(day, 'YYYYMMDD') + n, 'YYYYMMDD'); END $$`); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "--datasource", "pg="+url)
		procedure = `
  - {name: proc, type: procedure, datasource: pg, procedure: later, args: [{in: '${day}'}, {in: '2'}, {out: due}]}
  - {name: after, type: shell, upstream: [proc], script: 'echo "\${setValue(got=${due})}"'}`
	}
	e.startWorker("tasktypes-1", flags...)

	e.apply(`name: tasktypes
tenant: t1
worker_group: tasktypes
params: {day: '$[yyyyMMdd]'}
tasks:
  - name: who
    type: shell
    outputs: [user, queue]
    script: |
      echo "\${setValue(user=$(id -un))}"
      echo "\${setValue(queue=$STRAND_QUEUE)}"
  - name: py
    type: python
    upstream: [who]
    script: |
      import os, pwd
      print("${setValue(py=%s-%s-${user})}" % (pwd.getpwuid(os.getuid()).pw_name, os.environ["STRAND_QUEUE"]))
  - {name: spark, type: spark, queue: root.adhoc, main_class: com.example.Etl, main_jar: etl.jar, app_name: 'etl ${day}',
     driver_memory: 512m, num_executors: 2, main_args: '--day ${day}'}
  - {name: flink, type: flink, main_class: M, main_jar: f.jar, parallelism: 2}
  - {name: mr, type: mr, main_class: M, main_jar: m.jar, main_args: '${day}'}
  - {name: datax, type: datax, job: '{"job": {"day": "${day}"}}', xmx: 2}
  - {name: sqoop, type: sqoop, mode: export, connect: 'jdbc:mysql://db/shop', table: totals, export_dir: '/data/${day}'}` + procedure + "\n")
	id := e.start(dag.RunInput{DAG: "tasktypes", ScheduleTime: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	inst := e.wait(id)
	if inst.State != dag.StateSuccess {
		for _, ti := range inst.Tasks {
			if ti.Error != "" {
				l, _ := e.client.Log(e.ctx, id, ti.Name)
				t.Logf("%s: %s\n%s", ti.Name, ti.Error, l.Log)
			}
		}
		t.Fatalf("tasktypes: %s", states0(inst))
	}
	for name, want := range map[string]map[string]string{
		"who": {"user": "nobody", "queue": "root.t1"},
		"py":  {"py": "nobody-root.t1-nobody"},
	} {
		if got := task(inst, name).Outputs; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: outputs %v, want %v", name, got, want)
		}
	}
	if procedure != "" {
		if got := task(inst, "after").Outputs["got"]; got != "20260303" {
			t.Errorf("the procedure's OUT value downstream: %q, want 20260303 (%v)", got, task(inst, "proc"))
		}
	}
	for name, want := range map[string]string{
		"spark": bracketed("--master", "yarn", "--deploy-mode", "cluster", "--class", "com.example.Etl", "--driver-memory", "512m",
			"--num-executors", "2", "--name", "etl 20260301", "--queue", "root.adhoc", "etl.jar", "--day", "20260301"),
		"flink": bracketed("run", "-m", "yarn-cluster", "-yqu", "root.t1", "-p", "2", "-c", "M", "f.jar"),
		"mr":    bracketed("jar", "m.jar", "M", "-D", "mapreduce.job.queuename=root.t1", "20260301"),
		"datax": bracketed(datax, "--jvm=-Xms1G -Xmx2G", "job.json") + `{"job": {"day": "20260301"}}` + "\n",
		"sqoop": bracketed("export", "-D", "mapreduce.job.queuename=root.t1", "--connect", "jdbc:mysql://db/shop", "--table", "totals",
			"--export-dir", "/data/20260301"),
	} {
		l, err := e.client.Log(e.ctx, id, name)
		if err != nil {
			t.Fatal(err)
		}
		cmdLine, rest, _ := strings.Cut(l.Log, "\n")
		if !strings.HasPrefix(cmdLine, "command: ") || rest != want {
			t.Errorf("%s: the tool got\n%s\nwant\n%s\n(log %q)", name, rest, want, l.Log)
		}
	}
}
