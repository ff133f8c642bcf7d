package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"modernc.org/sqlite"
)

// Procedure is a procedure task: a stored procedure called on a data
// source, as DolphinScheduler's procedure task calls it.
type Procedure struct {
	// DataSource names the database, as a SQL task's does.
	DataSource string
	// Name is the procedure's name, NAME or SCHEMA.NAME (checked by the
	// definition: it is written into the statement).
	Name string
	// Args are the call's arguments, in order.
	Args []ProcedureArg
}

// ProcedureArg is an argument: an IN value, or an OUT parameter whose
// value becomes the output Out.
type ProcedureArg struct {
	In  *string
	Out string
}

// ProcedureResult is what a procedure task got.
type ProcedureResult struct {
	// Outputs are the OUT parameters' values, by the names of Args.
	Outputs map[string]string
}

// ErrNoProcedures is the error of a procedure task on a database that has
// no stored procedures (SQLite).
var ErrNoProcedures = errors.New("the database has no stored procedures")

// RunProcedure calls p on its data source, looked up in ds as RunSQL looks
// up a SQL task's: CALL NAME($1, ..., NULL, ...) with the IN values as
// the statement's parameters and NULL for each OUT parameter (PostgreSQL's
// convention). The OUT parameters' values are the row the call returns,
// in order. The statement, the values and the outputs go to log.
func RunProcedure(ctx context.Context, ds *DataSources, p Procedure, log io.Writer) (ProcedureResult, error) {
	if ds == nil {
		return ProcedureResult{}, &UnknownDataSourceError{Name: p.DataSource}
	}
	db, err := ds.DB(ctx, p.DataSource)
	if err != nil {
		return ProcedureResult{}, fmt.Errorf("procedure task: %w", err)
	}
	if _, ok := db.Driver().(*sqlite.Driver); ok {
		return ProcedureResult{}, fmt.Errorf("procedure task: data source %q is SQLite: %w", p.DataSource, ErrNoProcedures)
	}
	var (
		placeholders []string
		values       []any
		outs         []string
	)
	for _, a := range p.Args {
		if a.In != nil {
			values = append(values, *a.In)
			placeholders = append(placeholders, fmt.Sprintf("$%d", len(values)))
		} else {
			outs = append(outs, a.Out)
			placeholders = append(placeholders, "NULL")
		}
	}
	stmt := fmt.Sprintf("CALL %s(%s)", p.Name, strings.Join(placeholders, ", "))
	lg := &errWriter{w: log}
	lg.printf("-- %s\n", stmt)
	for i, v := range values {
		lg.printf("-- $%d = %s\n", i+1, v)
	}
	res := ProcedureResult{Outputs: map[string]string{}}
	if len(outs) == 0 {
		if _, err := db.ExecContext(ctx, stmt, values...); err != nil {
			lg.printf("-- %v\n", err)
			return res, fmt.Errorf("procedure task: %s: %w", p.Name, err)
		}
		lg.printf("-- done\n")
		return res, logErr(lg)
	}
	rows, err := db.QueryContext(ctx, stmt, values...)
	if err != nil {
		lg.printf("-- %v\n", err)
		return res, fmt.Errorf("procedure task: %s: %w", p.Name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return res, fmt.Errorf("procedure task: %s: columns: %w", p.Name, err)
	}
	if len(cols) != len(outs) {
		return res, fmt.Errorf("procedure task: %s returned %d OUT values (%s); the task names %d (%s)",
			p.Name, len(cols), strings.Join(cols, ", "), len(outs), strings.Join(outs, ", "))
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return res, fmt.Errorf("procedure task: %s: %w", p.Name, err)
		}
		return res, fmt.Errorf("procedure task: %s returned no OUT values", p.Name)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return res, fmt.Errorf("procedure task: %s: %w", p.Name, err)
	}
	for i, name := range outs {
		res.Outputs[name] = sqlString(vals[i])
		lg.printf("-- output %s = %s\n", name, res.Outputs[name])
	}
	if err := rows.Close(); err != nil {
		return res, fmt.Errorf("procedure task: %s: %w", p.Name, err)
	}
	return res, logErr(lg)
}

func logErr(lg *errWriter) error {
	if lg.err != nil {
		return fmt.Errorf("procedure task: write log: %w", lg.err)
	}
	return nil
}
