package task

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Tools are the programs the big-data task types run on a worker, and the
// Python interpreter of python tasks (and of DataX).
type Tools struct {
	Python      string
	SparkSubmit string
	Flink       string
	Hadoop      string
	Sqoop       string
	// DataX is datax.py, run by Python.
	DataX string
}

// WithDefaults fills the blanks of t as DolphinScheduler's workers find
// the tools: under SPARK_HOME, FLINK_HOME, HADOOP_HOME, SQOOP_HOME and
// DATAX_HOME when getenv has them, else by name on PATH (python3,
// spark-submit, flink, hadoop, sqoop, datax.py).
func (t Tools) WithDefaults(getenv func(string) string) Tools {
	home := func(env, rel, name string) string {
		if h := getenv(env); h != "" {
			return filepath.Join(h, rel)
		}
		return name
	}
	t.Python = cmp.Or(t.Python, "python3")
	t.SparkSubmit = cmp.Or(t.SparkSubmit, home("SPARK_HOME", "bin/spark-submit", "spark-submit"))
	t.Flink = cmp.Or(t.Flink, home("FLINK_HOME", "bin/flink", "flink"))
	t.Hadoop = cmp.Or(t.Hadoop, home("HADOOP_HOME", "bin/hadoop", "hadoop"))
	t.Sqoop = cmp.Or(t.Sqoop, home("SQOOP_HOME", "bin/sqoop", "sqoop"))
	t.DataX = cmp.Or(t.DataX, home("DATAX_HOME", "bin/datax.py", "datax.py"))
	return t
}

// Command is a command line of words.
type Command []Word

// Word is a word of a command line: a value, quoted for bash as needed,
// or (Raw) text the user wrote for a command line, put in as it is, where
// it may be several words (DolphinScheduler's main arguments and "others").
type Word struct {
	Text string
	Raw  bool
}

// String is the command line as bash text.
func (c Command) String() string {
	parts := make([]string, 0, len(c))
	for _, w := range c {
		switch {
		case w.Raw && strings.TrimSpace(w.Text) == "":
		case w.Raw:
			parts = append(parts, strings.TrimSpace(w.Text))
		default:
			parts = append(parts, Quote(w.Text))
		}
	}
	return strings.Join(parts, " ")
}

// Quote is s as one bash word: as it is when it holds only characters
// bash leaves alone, else in single quotes.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cmdBuilder collects the words of a command line.
type cmdBuilder struct{ c Command }

func (b *cmdBuilder) add(words ...string) {
	for _, w := range words {
		b.c = append(b.c, Word{Text: w})
	}
}

// opt adds an option and its value when the value is set.
func (b *cmdBuilder) opt(name, value string) {
	if value != "" {
		b.add(name, value)
	}
}

// num adds an option and its value when the value is positive.
func (b *cmdBuilder) num(name string, v int) {
	if v > 0 {
		b.add(name, strconv.Itoa(v))
	}
}

func (b *cmdBuilder) raw(text string) {
	if strings.TrimSpace(text) != "" {
		b.c = append(b.c, Word{Text: text, Raw: true})
	}
}

// Program is what spark, flink and mr tasks run: a main class in a jar
// (java, scala), or a Python file, with its arguments.
type Program struct {
	// Type is java, scala or python (default java).
	Type      string
	MainClass string
	MainJar   string
	AppName   string
	// MainArgs and Others are command-line text (bash words): the
	// program's arguments, and more options of the tool.
	MainArgs string
	Others   string
	// Queue is the YARN queue.
	Queue string
}

func (p Program) python() bool { return p.Type == "python" }

// Spark is a spark task, DolphinScheduler 1.3's fields.
type Spark struct {
	Program
	// DeployMode is cluster (default), client or local.
	DeployMode     string
	DriverCores    int
	DriverMemory   string
	NumExecutors   int
	ExecutorCores  int
	ExecutorMemory string
}

// Command is the spark-submit command line, in DolphinScheduler 1.3's
// order: --master, --deploy-mode, --class, the driver's and executors'
// resources, --name, --queue (unless Others has one), Others, the jar and
// the arguments.
func (s Spark) Command(sparkSubmit string) Command {
	b := &cmdBuilder{}
	b.add(sparkSubmit)
	mode := cmp.Or(s.DeployMode, "cluster")
	if mode == "local" {
		b.add("--master", "local")
	} else {
		b.add("--master", "yarn", "--deploy-mode", mode)
	}
	if !s.python() {
		b.opt("--class", s.MainClass)
	}
	b.num("--driver-cores", s.DriverCores)
	b.opt("--driver-memory", s.DriverMemory)
	b.num("--num-executors", s.NumExecutors)
	b.num("--executor-cores", s.ExecutorCores)
	b.opt("--executor-memory", s.ExecutorMemory)
	b.opt("--name", s.AppName)
	if mode != "local" && !strings.Contains(s.Others, "--queue") {
		b.opt("--queue", s.Queue)
	}
	b.raw(s.Others)
	b.add(s.MainJar)
	b.raw(s.MainArgs)
	return b.c
}

// Flink is a flink task, DolphinScheduler 1.3's fields.
type Flink struct {
	Program
	// DeployMode is cluster (default: on YARN, -m yarn-cluster) or local.
	DeployMode     string
	Slots          int
	TaskManagers   int
	JobManagerMem  string
	TaskManagerMem string
	Parallelism    int
}

// Command is the `flink run` command line, in DolphinScheduler 1.3's
// order: -m yarn-cluster with -ys, -ynm, -yn, -yjm, -ytm and -yqu (unless
// Others has one), -p, Others, -c with the main class (-py for a Python
// program), the jar and the arguments.
func (f Flink) Command(flink string) Command {
	b := &cmdBuilder{}
	b.add(flink, "run")
	if cmp.Or(f.DeployMode, "cluster") == "cluster" {
		b.add("-m", "yarn-cluster")
		b.num("-ys", f.Slots)
		b.opt("-ynm", f.AppName)
		b.num("-yn", f.TaskManagers)
		b.opt("-yjm", f.JobManagerMem)
		b.opt("-ytm", f.TaskManagerMem)
		if !strings.Contains(f.Others, "-yqu") {
			b.opt("-yqu", f.Queue)
		}
	}
	b.num("-p", f.Parallelism)
	b.raw(f.Others)
	if f.python() {
		b.add("-py", f.MainJar)
	} else {
		b.opt("-c", f.MainClass)
		b.add(f.MainJar)
	}
	b.raw(f.MainArgs)
	return b.c
}

// MapReduce is an mr task: `hadoop jar`.
type MapReduce struct {
	Program
}

// Command is the `hadoop jar` command line, in DolphinScheduler 1.3's
// order: the jar, the main class (none for a Python program: the jar is
// Hadoop streaming's), -D mapreduce.job.name, -D mapreduce.job.queuename
// (unless Others sets it), Others and the arguments.
func (m MapReduce) Command(hadoop string) Command {
	b := &cmdBuilder{}
	b.add(hadoop, "jar", m.MainJar)
	if !m.python() {
		b.add(m.MainClass)
	}
	if m.AppName != "" {
		b.add("-D", "mapreduce.job.name="+m.AppName)
	}
	if m.Queue != "" && !strings.Contains(m.Others, "mapreduce.job.queuename") {
		b.add("-D", "mapreduce.job.queuename="+m.Queue)
	}
	b.raw(m.Others)
	b.raw(m.MainArgs)
	return b.c
}

// DataX is a datax task: a job, JSON, run by datax.py.
type DataX struct {
	Job string
	// Xms and Xmx are the JVM's heap in GB (default 1).
	Xms, Xmx int
}

// DataXJobFile is the name of the job's file in the task's working
// directory.
const DataXJobFile = "job.json"

// Command is `PYTHON datax.py --jvm="-XmsNG -XmxNG" job.json`, as
// DolphinScheduler 1.3 runs DataX.
func (d DataX) Command(python, datax string) Command {
	b := &cmdBuilder{}
	b.add(python, datax, fmt.Sprintf("--jvm=-Xms%dG -Xmx%dG", max(d.Xms, 1), max(d.Xmx, 1)), DataXJobFile)
	return b.c
}

// Script is the bash script of a datax task: it writes the job's file,
// then runs DataX.
func (d DataX) Script(python, datax string) string {
	job := d.Job
	if !strings.HasSuffix(job, "\n") {
		job += "\n"
	}
	return fmt.Sprintf("printf '%%s' %s > %s\nexec %s\n", Quote(job), DataXJobFile, d.Command(python, datax))
}

// Sqoop is a sqoop task: an import from a database into HDFS (or Hive), or
// an export from HDFS into a database table.
type Sqoop struct {
	// Mode is import or export.
	Mode         string
	Connect      string
	Username     string
	PasswordFile string
	Table        string
	Columns      []string
	Where        string
	// Query is a free-form import query, with $CONDITIONS.
	Query              string
	SplitBy            string
	Mappers            int
	TargetDir          string
	DeleteTargetDir    bool
	HiveTable          string
	ExportDir          string
	FieldsTerminatedBy string
	UpdateKey          string
	UpdateMode         string
	AppName            string
	Queue              string
	Others             string
}

// Command is the sqoop command line: the generic options (-D
// mapred.job.name, -D mapreduce.job.queuename) first, then -m, the
// connection, what is read and where it goes, then Others.
func (s Sqoop) Command(sqoop string) Command {
	b := &cmdBuilder{}
	b.add(sqoop, s.Mode)
	if s.AppName != "" {
		b.add("-D", "mapred.job.name="+s.AppName)
	}
	if s.Queue != "" && !strings.Contains(s.Others, "mapreduce.job.queuename") {
		b.add("-D", "mapreduce.job.queuename="+s.Queue)
	}
	b.num("-m", s.Mappers)
	b.opt("--connect", s.Connect)
	b.opt("--username", s.Username)
	b.opt("--password-file", s.PasswordFile)
	b.opt("--table", s.Table)
	if len(s.Columns) > 0 {
		b.add("--columns", strings.Join(s.Columns, ","))
	}
	if s.Mode == "export" {
		b.opt("--export-dir", s.ExportDir)
		b.opt("--fields-terminated-by", s.FieldsTerminatedBy)
		b.opt("--update-key", s.UpdateKey)
		b.opt("--update-mode", s.UpdateMode)
	} else {
		b.opt("--where", s.Where)
		b.opt("--query", s.Query)
		b.opt("--split-by", s.SplitBy)
		b.opt("--target-dir", s.TargetDir)
		if s.DeleteTargetDir {
			b.add("--delete-target-dir")
		}
		if s.HiveTable != "" {
			b.add("--hive-import", "--hive-table", s.HiveTable)
		}
		b.opt("--fields-terminated-by", s.FieldsTerminatedBy)
	}
	b.raw(s.Others)
	return b.c
}
