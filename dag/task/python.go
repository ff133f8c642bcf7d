package task

import (
	"cmp"
	"context"
	"io"
)

// Python is a python task: a script run by a Python interpreter, with
// everything else as a shell task has it (working directory, environment,
// outputs, process group, user).
type Python struct {
	Shell
	// Interpreter is the program that runs the script (default python3,
	// looked up on PATH).
	Interpreter string
}

// RunPython runs py as RunShell runs a shell task, with py.Interpreter in
// place of bash: `INTERPRETER script.py` in a fresh working directory,
// outputs set by ${setValue(key=value)} printed on stdout, the process
// group killed when ctx ends or the worker dies.
func RunPython(ctx context.Context, py Python, log io.Writer) (ShellResult, error) {
	return runScript(ctx, py.Shell, program{what: "python task", path: cmp.Or(py.Interpreter, "python3"), file: "script.py"}, log)
}
