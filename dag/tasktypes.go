package dag

// Tenants, queues, and the task types of DolphinScheduler 1.3 beyond
// shell, http and sql: python, procedure, spark, flink, mr, datax and
// sqoop (issue 35). Their fields are in Task; here is how they are read,
// checked and expanded.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// taskTypeList names every task type, for errors.
const taskTypeList = "shell, http, sql, sub_process, conditions, switch, dependent, step, python, procedure, spark, flink, mr, datax, sqoop"

// bigDataFields are the fields spark, flink and mr tasks share.
var bigDataFields = []string{"program_type", "main_class", "main_jar", "app_name", "main_args", "others"}

// processFields are the fields of every task type that runs processes on
// a worker: their tenant, queue and environment.
var processFields = []string{"tenant", "queue", "env"}

func init() {
	typeFields[TypeShell] = append(typeFields[TypeShell], "tenant", "queue")
	typeFields[TypePython] = append([]string{"script"}, processFields...)
	typeFields[TypeProcedure] = []string{"datasource", "procedure", "args"}
	typeFields[TypeSpark] = slices.Concat(bigDataFields, processFields, []string{"deploy_mode", "driver_cores", "driver_memory",
		"num_executors", "executor_cores", "executor_memory"})
	typeFields[TypeFlink] = slices.Concat(bigDataFields, processFields, []string{"deploy_mode", "slots", "task_managers",
		"job_manager_memory", "task_manager_memory", "parallelism"})
	typeFields[TypeMR] = slices.Concat(bigDataFields, processFields)
	typeFields[TypeDataX] = slices.Concat([]string{"job", "xms", "xmx"}, processFields)
	typeFields[TypeSqoop] = slices.Concat([]string{"mode", "connect", "username", "password_file", "table", "columns", "where",
		"sql", "split_by", "mappers", "target_dir", "delete_target_dir", "export_dir", "hive_table", "fields_terminated_by",
		"update_key", "update_mode", "app_name", "others"}, processFields)
}

// runsProcess tells whether tasks of type tt run processes on a worker, as
// a tenant's user and with a queue.
func runsProcess(tt TaskType) bool {
	switch tt {
	case TypeShell, TypePython, TypeSpark, TypeFlink, TypeMR, TypeDataX, TypeSqoop:
		return true
	}
	return false
}

// ProcedureArg is an argument of a stored procedure call: an IN value (a
// template, like any value) or an OUT parameter, whose value becomes the
// task's output of that name.
type ProcedureArg struct {
	In  *string `json:"in,omitempty"`
	Out string  `json:"out,omitempty"`
}

// taskTypeField sets a field of the task types of this file.
func (p *parser) taskTypeField(t *Task, key string, v *yaml.Node, f string) {
	str := func() string { return p.str(v, f) }
	num := func() int { return p.integer(v, f) }
	switch key {
	case "tenant":
		t.Tenant = str()
	case "procedure":
		t.Procedure = str()
	case "args":
		p.each(v, f, "{in: VALUE} or {out: NAME}", func(e *yaml.Node, ef string) {
			var a ProcedureArg
			p.fields(e, ef, func(key string, v *yaml.Node, f string) bool {
				switch key {
				case "in":
					s := ""
					if v.Kind != yaml.ScalarNode || v.Tag != "!!null" {
						s = p.str(v, f)
					}
					a.In = &s
				case "out":
					a.Out = p.str(v, f)
					if t.Outputs == nil {
						t.Outputs = map[string]string{}
					}
					t.Outputs[a.Out] = ""
				default:
					return false
				}
				return true
			})
			if e.Kind == yaml.MappingNode && (a.In == nil) == (a.Out == "") {
				p.fail(e, ef, "an argument is either {in: VALUE} or {out: NAME}")
			}
			t.Args = append(t.Args, a)
		})
	case "program_type":
		t.ProgramType = strings.ToLower(str())
	case "main_class":
		t.MainClass = str()
	case "main_jar":
		t.MainJar = str()
	case "deploy_mode":
		t.DeployMode = strings.ToLower(str())
	case "app_name":
		t.AppName = str()
	case "driver_cores":
		t.DriverCores = num()
	case "driver_memory":
		t.DriverMemory = str()
	case "num_executors":
		t.NumExecutors = num()
	case "executor_cores":
		t.ExecutorCores = num()
	case "executor_memory":
		t.ExecutorMemory = str()
	case "slots":
		t.Slots = num()
	case "task_managers":
		t.TaskManagers = num()
	case "job_manager_memory":
		t.JobManagerMem = str()
	case "task_manager_memory":
		t.TaskManagerMem = str()
	case "parallelism":
		t.Parallelism = num()
	case "main_args":
		t.MainArgs = str()
	case "others":
		t.Others = str()
	case "job":
		t.Job = str()
	case "xms":
		t.Xms = num()
	case "xmx":
		t.Xmx = num()
	case "mode":
		t.Mode = strings.ToLower(str())
	case "connect":
		t.Connect = str()
	case "username":
		t.Username = str()
	case "password_file":
		t.PasswordFile = str()
	case "table":
		t.Table = str()
	case "columns":
		t.Columns = p.strings(v, f)
	case "where":
		t.Where = str()
	case "split_by":
		t.SplitBy = str()
	case "mappers":
		t.Mappers = num()
	case "target_dir":
		t.TargetDir = str()
	case "delete_target_dir":
		t.DeleteTargetDir = p.boolean(v, f)
	case "export_dir":
		t.ExportDir = str()
	case "hive_table":
		t.HiveTable = str()
	case "fields_terminated_by":
		t.FieldsTerminatedBy = str()
	case "update_key":
		t.UpdateKey = str()
	case "update_mode":
		t.UpdateMode = strings.ToLower(str())
	}
}

var (
	// memoryRE is a memory size as Spark and Flink take it: 512m, 2g.
	memoryRE = regexp.MustCompile(`^[0-9]+[kKmMgGtT]?[bB]?$`)
	// procedureRE is a procedure's name, with its schema or not: it is
	// written into the CALL statement, so nothing else may be in it.
	procedureRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$`)
	// queueRE is a (YARN) queue's name: root.etl, default.
	queueRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$`)
	// outputRE is an output parameter's name.
	outputRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)
)

// checkTaskType checks the tenant and queue of a task that runs processes
// and the fields of the task types of this file, and adds their values to
// the templates whose parameters are checked.
func (p *parser) checkTaskType(d *Definition, t *Task, f string, templates map[string]string) {
	at := func(field string) string {
		if _, ok := p.pos[f+"."+field]; ok {
			return f + "." + field
		}
		return f
	}
	need := func(field, what string, ok bool) {
		if !ok {
			p.failAt(at(field), "a %s task needs %s (%s)", t.Type, what, field)
		}
	}
	oneOf := func(field, value string, allowed ...string) {
		if value != "" && !slices.Contains(allowed, value) {
			p.failAt(at(field), "%q: want %s", value, strings.Join(allowed, ", "))
		}
	}
	atLeast := func(field string, v, lo int) {
		if v < lo || v > 100000 {
			p.failAt(at(field), "%d is outside %d..100000", v, lo)
		}
	}
	memory := func(field, v string) {
		if v != "" && !strings.Contains(v, "${") && !memoryRE.MatchString(v) {
			p.failAt(at(field), "%q is not a memory size such as 512m or 2g", v)
		}
	}
	tmpl := func(field, v string) {
		if v != "" {
			templates[field] = v
		}
	}

	if runsProcess(t.Type) {
		if t.Tenant == "" && d.Tenant != "" {
			t.Tenant = d.Tenant
		} else if t.Tenant != "" {
			p.tenantRef(d, t.Tenant, at("tenant"))
		}
		if t.Queue != "" && !queueRE.MatchString(t.Queue) {
			p.failAt(at("queue"), "%q is not a queue name: letters, digits, '_', '.' and '-'", t.Queue)
		}
	}
	switch t.Type {
	case TypePython:
		need("script", "a script", t.Script != "")
		templates["script"] = shellTemplate(t.Script)
		for k, v := range t.Env {
			templates["env."+k] = v
		}
	case TypeProcedure:
		need("datasource", "a data source", t.DataSource != "")
		need("procedure", "a procedure's name", t.Procedure != "")
		if t.Procedure != "" && !procedureRE.MatchString(t.Procedure) {
			p.failAt(at("procedure"), "%q is not a procedure's name: NAME or SCHEMA.NAME, letters, digits and '_'", t.Procedure)
		}
		if _, ok := p.pos[f+".outputs"]; ok {
			p.failAt(f+".outputs", "a procedure task's outputs are its out arguments (args: [{out: NAME}])")
		}
		seen := map[string]bool{}
		for j, a := range t.Args {
			af := fmt.Sprintf("args[%d]", j)
			switch {
			case a.In != nil:
				tmpl(af+".in", *a.In)
			case !outputRE.MatchString(a.Out):
				p.failAt(at(af), "%q is not an output parameter's name", a.Out)
			case seen[a.Out]:
				p.failAt(at(af), "out argument %q is given twice", a.Out)
			}
			seen[a.Out] = true
		}
	case TypeSpark, TypeFlink, TypeMR:
		need("main_jar", "the program's jar or file", t.MainJar != "")
		types := []string{"java", "scala", "python"}
		if t.Type == TypeMR {
			types = []string{"java", "python"}
		}
		oneOf("program_type", t.ProgramType, types...)
		need("main_class", "a main class", t.MainClass != "" || t.ProgramType == "python")
		switch t.Type {
		case TypeSpark:
			oneOf("deploy_mode", t.DeployMode, "cluster", "client", "local")
			atLeast("driver_cores", t.DriverCores, 0)
			atLeast("num_executors", t.NumExecutors, 0)
			atLeast("executor_cores", t.ExecutorCores, 0)
			memory("driver_memory", t.DriverMemory)
			memory("executor_memory", t.ExecutorMemory)
		case TypeFlink:
			oneOf("deploy_mode", t.DeployMode, "cluster", "local")
			atLeast("slots", t.Slots, 0)
			atLeast("task_managers", t.TaskManagers, 0)
			atLeast("parallelism", t.Parallelism, 0)
			memory("job_manager_memory", t.JobManagerMem)
			memory("task_manager_memory", t.TaskManagerMem)
		}
		for field, v := range map[string]string{"main_class": t.MainClass, "main_jar": t.MainJar, "app_name": t.AppName,
			"main_args": t.MainArgs, "others": t.Others, "driver_memory": t.DriverMemory, "executor_memory": t.ExecutorMemory,
			"job_manager_memory": t.JobManagerMem, "task_manager_memory": t.TaskManagerMem} {
			tmpl(field, v)
		}
	case TypeDataX:
		need("job", "a job (DataX's JSON)", t.Job != "")
		if t.Job != "" && !strings.Contains(t.Job, "${") && !json.Valid([]byte(t.Job)) {
			var v any
			err := json.Unmarshal([]byte(t.Job), &v)
			p.failAt(at("job"), "the job is not JSON: %v", err)
		}
		atLeast("xms", t.Xms, 0)
		atLeast("xmx", t.Xmx, 0)
		tmpl("job", t.Job)
	case TypeSqoop:
		need("mode", "a mode (import or export)", t.Mode != "")
		oneOf("mode", t.Mode, "import", "export")
		need("connect", "a JDBC URL to connect to", t.Connect != "")
		atLeast("mappers", t.Mappers, 0)
		switch t.Mode {
		case "import":
			need("table", "a table or a query (sql)", t.Table != "" || t.SQL != "")
			if t.Table != "" && t.SQL != "" {
				p.failAt(at("sql"), "an import reads a table or a query (sql), not both")
			}
			if t.SQL != "" && !strings.Contains(t.SQL, "$CONDITIONS") {
				p.failAt(at("sql"), "a sqoop import's query needs $CONDITIONS in its WHERE clause")
			}
			if t.SQL != "" && t.Mappers != 1 && t.SplitBy == "" {
				p.failAt(at("sql"), "a query imported by more than one mapper needs split_by (or mappers: 1)")
			}
			need("target_dir", "a target directory or a Hive table (target_dir or hive_table)", t.TargetDir != "" || t.HiveTable != "")
			for _, field := range []string{"export_dir", "update_key", "update_mode"} {
				if _, ok := p.pos[f+"."+field]; ok {
					p.failAt(f+"."+field, "only an export has %s", field)
				}
			}
		case "export":
			need("table", "a table", t.Table != "")
			need("export_dir", "a directory to export (export_dir)", t.ExportDir != "")
			oneOf("update_mode", t.UpdateMode, "updateonly", "allowinsert")
			for _, field := range []string{"sql", "where", "split_by", "target_dir", "delete_target_dir", "hive_table"} {
				if _, ok := p.pos[f+"."+field]; ok {
					p.failAt(f+"."+field, "only an import has %s", field)
				}
			}
		}
		for field, v := range map[string]string{"connect": t.Connect, "username": t.Username, "password_file": t.PasswordFile,
			"table": t.Table, "where": t.Where, "sql": t.SQL, "split_by": t.SplitBy, "target_dir": t.TargetDir,
			"export_dir": t.ExportDir, "hive_table": t.HiveTable, "fields_terminated_by": t.FieldsTerminatedBy,
			"update_key": t.UpdateKey, "app_name": t.AppName, "others": t.Others} {
			tmpl(field, v)
		}
		for j, c := range t.Columns {
			tmpl(fmt.Sprintf("columns[%d]", j), c)
		}
	}
	if slices.Contains([]TaskType{TypeSpark, TypeFlink, TypeMR, TypeDataX, TypeSqoop}, t.Type) {
		for k, v := range t.Env {
			templates["env."+k] = v
		}
	}
}

// tenantRef keeps a tenant the definition names, for Apply's warnings.
func (p *parser) tenantRef(d *Definition, name, field string) {
	if !validName.MatchString(name) {
		p.failAt(field, "%q is not a tenant name: letters, digits, '_', '.' and '-', starting with a letter or digit", name)
		return
	}
	d.tenantRefs = append(d.tenantRefs, reference{dag: name, field: field, pos: p.pos[field], what: "run as"})
}

// checkDefinitionTenant checks the definition's own tenant.
func (p *parser) checkDefinitionTenant(d *Definition) {
	if d.Tenant != "" {
		p.tenantRef(d, d.Tenant, "tenant")
	}
}

// expandTaskType expands the parameters of the fields of this file's task
// types (x expands one value, xs a list); the fields they share with
// other types (script, env, sql) are expanded with those.
func expandTaskType(t *Task, x func(string) string, xs func([]string) []string) {
	if len(t.Args) > 0 {
		args := slices.Clone(t.Args)
		for i := range args {
			if args[i].In != nil {
				v := x(*args[i].In)
				args[i].In = &v
			}
		}
		t.Args = args
	}
	for _, s := range []*string{&t.MainClass, &t.MainJar, &t.AppName, &t.MainArgs, &t.Others, &t.DriverMemory,
		&t.ExecutorMemory, &t.JobManagerMem, &t.TaskManagerMem, &t.Job, &t.Connect, &t.Username, &t.PasswordFile,
		&t.Table, &t.Where, &t.SplitBy, &t.TargetDir, &t.ExportDir, &t.HiveTable, &t.FieldsTerminatedBy, &t.UpdateKey} {
		*s = x(*s)
	}
	t.Columns = xs(t.Columns)
}
