package task_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/internal/testdb"
)

// TestPython: a python task's script runs by the configured interpreter,
// sets outputs as a shell task's does, and is killed with its process
// group when its context ends.
func TestPython(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	var log bytes.Buffer
	res, err := task.RunPython(context.Background(), task.Python{Interpreter: py, Shell: task.Shell{Env: map[string]string{"GREETING": "hi"}, Script: `
import os, sys
print(os.environ["GREETING"], sys.version_info[0])
print("${setValue(answer=%d)}" % (6 * 7))
`}}, &log)
	if err != nil {
		t.Fatalf("RunPython: %v\n%s", err, log.String())
	}
	if res.Outputs["answer"] != "42" || !strings.HasPrefix(log.String(), "hi 3\n") {
		t.Fatalf("outputs %v, log %q", res.Outputs, log.String())
	}

	_, err = task.RunPython(context.Background(), task.Python{Interpreter: py, Shell: task.Shell{Script: "import sys\nsys.exit(3)\n"}}, &log)
	var xe *task.ExitError
	if !errors.As(err, &xe) || xe.Code != 3 || err.Error() != "python task: exit code 3" {
		t.Fatalf("exit 3: %v", err)
	}

	// Stopped: the interpreter and its children are killed.
	lb := newLogBuffer("started")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var pid int
	go func() {
		res, err := task.RunPython(ctx, task.Python{Interpreter: py, Shell: task.Shell{KillGrace: time.Second, Script: `
import subprocess, time
child = subprocess.Popen(["sleep", "300"])
print("${setValue(child=%d)}" % child.pid, flush=True)
print("started", flush=True)
time.sleep(300)
`}}, lb)
		pid = res.PID
		done <- err
	}()
	select {
	case <-lb.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("the script did not start: %q", lb.String())
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "python task killed") {
		t.Fatalf("stopped: %v", err)
	}
	if pid <= 0 || alive(t, pid) {
		t.Fatalf("the interpreter %d is alive after the stop", pid)
	}
}

// TestShellAsUser: a script runs as the user given (the worker must be
// root), in a working directory that user owns.
func TestShellAsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	u, err := task.LookupUser("nobody")
	if err != nil {
		t.Skip(err)
	}
	var log bytes.Buffer
	res, err := task.RunShell(context.Background(), task.Shell{User: u, Script: `echo "\${setValue(who=$(id -un))}"; echo "$USER $HOME"; touch mine; stat -c %U mine`}, &log)
	if err != nil {
		t.Fatalf("RunShell as nobody: %v\n%s", err, log.String())
	}
	if res.Outputs["who"] != "nobody" || !strings.Contains(log.String(), "nobody "+u.Home+"\nnobody\n") {
		t.Fatalf("outputs %v, log %q", res.Outputs, log.String())
	}
	var unknown *task.UnknownUserError
	if _, err := task.LookupUser("no-such-user-35"); !errors.As(err, &unknown) {
		t.Fatalf("an unknown user: %v", err)
	}
}

// standIn writes an executable script at dir/name that prints its
// arguments, one per line, as a big-data tool's stand-in.
func standIn(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/bash\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// args is what a stand-in printed: each argument in brackets.
func args(words ...string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString("[" + w + "]\n")
	}
	return b.String()
}

// TestBigDataCommands: each big-data task's command line is what
// DolphinScheduler 1.3 builds from its fields, as the tool receives it.
func TestBigDataCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tool := standIn(t, dir, "tool")
	prog := task.Program{MainClass: "com.example.Etl", MainJar: "etl.jar", AppName: "daily etl", Queue: "root.etl",
		MainArgs: `--day 20260101 "two words"`}
	for _, c := range []struct {
		name string
		cmd  task.Command
		want string
	}{
		{"spark", task.Spark{Program: prog, DriverCores: 1, DriverMemory: "512m", NumExecutors: 2, ExecutorCores: 2, ExecutorMemory: "2g"}.Command(tool),
			args("--master", "yarn", "--deploy-mode", "cluster", "--class", "com.example.Etl", "--driver-cores", "1", "--driver-memory", "512m",
				"--num-executors", "2", "--executor-cores", "2", "--executor-memory", "2g", "--name", "daily etl", "--queue", "root.etl",
				"etl.jar", "--day", "20260101", "two words")},
		{"spark local, python, others", task.Spark{DeployMode: "local", Program: task.Program{Type: "python", MainJar: "job.py", MainClass: "ignored",
			Queue: "q", Others: "--conf spark.x=1"}}.Command(tool),
			args("--master", "local", "--conf", "spark.x=1", "job.py")},
		{"flink", task.Flink{Program: prog, Slots: 2, TaskManagers: 3, JobManagerMem: "1G", TaskManagerMem: "2G", Parallelism: 4}.Command(tool),
			args("run", "-m", "yarn-cluster", "-ys", "2", "-ynm", "daily etl", "-yn", "3", "-yjm", "1G", "-ytm", "2G", "-yqu", "root.etl",
				"-p", "4", "-c", "com.example.Etl", "etl.jar", "--day", "20260101", "two words")},
		{"flink local python", task.Flink{DeployMode: "local", Program: task.Program{Type: "python", MainJar: "job.py", Queue: "q"}}.Command(tool),
			args("run", "-py", "job.py")},
		{"mr", task.MapReduce{Program: prog}.Command(tool),
			args("jar", "etl.jar", "com.example.Etl", "-D", "mapreduce.job.name=daily etl", "-D", "mapreduce.job.queuename=root.etl",
				"--day", "20260101", "two words")},
		{"mr, queue in others", task.MapReduce{Program: task.Program{MainClass: "M", MainJar: "m.jar", Queue: "q", Others: "-D mapreduce.job.queuename=other"}}.Command(tool),
			args("jar", "m.jar", "M", "-D", "mapreduce.job.queuename=other")},
		{"sqoop import", task.Sqoop{Mode: "import", AppName: "orders", Queue: "root.etl", Mappers: 4, Connect: "jdbc:mysql://db:3306/shop",
			Username: "etl", PasswordFile: "/user/etl/.pw", Query: "SELECT * FROM orders WHERE day = '20260101' AND $CONDITIONS", SplitBy: "id",
			TargetDir: "/data/orders/20260101", DeleteTargetDir: true, FieldsTerminatedBy: ","}.Command(tool),
			args("import", "-D", "mapred.job.name=orders", "-D", "mapreduce.job.queuename=root.etl", "-m", "4", "--connect", "jdbc:mysql://db:3306/shop",
				"--username", "etl", "--password-file", "/user/etl/.pw", "--query", "SELECT * FROM orders WHERE day = '20260101' AND $CONDITIONS",
				"--split-by", "id", "--target-dir", "/data/orders/20260101", "--delete-target-dir", "--fields-terminated-by", ",")},
		{"sqoop export", task.Sqoop{Mode: "export", Connect: "jdbc:mysql://db/shop", Table: "totals", Columns: []string{"day", "total"},
			ExportDir: "/data/totals", UpdateKey: "day", UpdateMode: "allowinsert", Others: "--batch"}.Command(tool),
			args("export", "--connect", "jdbc:mysql://db/shop", "--table", "totals", "--columns", "day,total", "--export-dir", "/data/totals",
				"--update-key", "day", "--update-mode", "allowinsert", "--batch")},
	} {
		var log bytes.Buffer
		if _, err := task.RunShell(context.Background(), task.Shell{Script: "exec " + c.cmd.String()}, &log); err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, log.String())
			continue
		}
		if log.String() != c.want {
			t.Errorf("%s: the tool got\n%s\nwant\n%s\n(command line %s)", c.name, log.String(), c.want, c.cmd)
		}
	}

	// DataX: the job goes to job.json in the working directory, which
	// DataX (run by the Python interpreter) reads.
	python := filepath.Join(dir, "python")
	os.WriteFile(python, []byte("#!/bin/bash\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\ncat \"${@: -1}\"\n"), 0o755)
	job := `{"job": {"content": [{"reader": {"name": "it's"}}]}}`
	var log bytes.Buffer
	if _, err := task.RunShell(context.Background(), task.Shell{Script: task.DataX{Job: job, Xmx: 4}.Script(python, "/opt/datax/bin/datax.py")}, &log); err != nil {
		t.Fatalf("datax: %v\n%s", err, log.String())
	}
	if want := args("/opt/datax/bin/datax.py", "--jvm=-Xms1G -Xmx4G", "job.json") + job + "\n"; log.String() != want {
		t.Errorf("datax got\n%s\nwant\n%s", log.String(), want)
	}

	tools := task.Tools{Flink: "/x/flink"}.WithDefaults(func(k string) string {
		return map[string]string{"SPARK_HOME": "/opt/spark", "DATAX_HOME": "/opt/datax"}[k]
	})
	if tools != (task.Tools{Python: "python3", SparkSubmit: "/opt/spark/bin/spark-submit", Flink: "/x/flink", Hadoop: "hadoop", Sqoop: "sqoop", DataX: "/opt/datax/bin/datax.py"}) {
		t.Errorf("tools %+v", tools)
	}
}

// TestProcedurePostgres: a procedure task calls a stored procedure with
// IN values and takes its OUT parameters as outputs; a SQLite data source
// has none.
func TestProcedurePostgres(t *testing.T) {
	t.Parallel()
	if os.Getenv(testdb.PostgresEnv) == "" {
		t.Skipf("PostgreSQL tests need %s to hold the URL of a server (scripts/postgres.sh url)", testdb.PostgresEnv)
	}
	base := testdb.PostgresURL(t)
	url := testdb.WithSearchPath(t, base, testdb.NewSchema(t, base))
	ds, err := task.NewDataSources([]task.DataSource{{Name: "pg", Driver: "postgres", DSN: url},
		{Name: "lite", Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "x.db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	_, err = task.RunSQL(context.Background(), ds, task.SQL{DataSource: "pg",
		Pre: []string{"CREATE TABLE sales (day text, amount numeric)", "INSERT INTO sales VALUES ('20260101', 10.5), ('20260101', 4.5), ('20260102', 1)"},
		Statement: `CREATE PROCEDURE day_total(IN d text, IN factor int, OUT total numeric, OUT n bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT sum(amount) * factor, count(*) INTO total, n FROM sales WHERE day = d;
END $$`}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	in := func(s string) *string { return &s }
	var log bytes.Buffer
	res, err := task.RunProcedure(context.Background(), ds, task.Procedure{DataSource: "pg", Name: "day_total",
		Args: []task.ProcedureArg{{In: in("20260101")}, {In: in("2")}, {Out: "total"}, {Out: "count"}}}, &log)
	if err != nil {
		t.Fatalf("RunProcedure: %v\n%s", err, log.String())
	}
	if res.Outputs["total"] != "30.0" || res.Outputs["count"] != "2" {
		t.Errorf("outputs %v\n%s", res.Outputs, log.String())
	}
	if !strings.HasPrefix(log.String(), "-- CALL day_total($1, $2, NULL, NULL)\n-- $1 = 20260101\n-- $2 = 2\n") {
		t.Errorf("log:\n%s", log.String())
	}
	// A wrong call fails with the database's error.
	if _, err := task.RunProcedure(context.Background(), ds, task.Procedure{DataSource: "pg", Name: "day_total",
		Args: []task.ProcedureArg{{In: in("x")}, {Out: "total"}}}, &log); err == nil || !strings.Contains(err.Error(), "day_total") {
		t.Errorf("a call with too few arguments: %v", err)
	}
	if _, err := task.RunProcedure(context.Background(), ds, task.Procedure{DataSource: "lite", Name: "p"}, &log); !errors.Is(err, task.ErrNoProcedures) {
		t.Errorf("on SQLite: %v", err)
	}
	var unknown *task.UnknownDataSourceError
	if _, err := task.RunProcedure(context.Background(), ds, task.Procedure{DataSource: "nope", Name: "p"}, &log); !errors.As(err, &unknown) {
		t.Errorf("an unknown data source: %v", err)
	}
}
