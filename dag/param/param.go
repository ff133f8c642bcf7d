// Package param substitutes parameters into the text of a DAG definition
// (a command, a SQL statement, a path) the way Apache DolphinScheduler
// does, so that definitions written for it keep their meaning.
//
// # Parameters
//
// ${name} is replaced by the parameter's value. A name is letters, digits,
// '_', '.' and '-' (DolphinScheduler's built-in ones are named like
// system.biz.date; see [Builtins]); spaces around it inside the braces are
// ignored. A value is inserted as it is: a "${x}" or "$[...]" in a value is
// not expanded again. [Resolve] computes parameters defined in terms of
// each other, such as a DAG's global parameters.
//
// # Time expressions
//
// $[...] is a time computed from a base time, the schedule's fire time or
// the start time, in the base time's location:
//
//	$[yyyyMMdd]               the base time, formatted
//	$[yyyyMMdd-1]             a day before; $[yyyyMMdd+7*2] two weeks after
//	$[yyyy-MM-dd HH:mm-1/24]  an hour before; -1/24/60 a minute before
//	$[add_months(yyyyMMdd,-1)]         a month before (January 31: December 31;
//	                                   March 31: February 28 or 29)
//	$[this_day(yyyy-MM-dd)]            the base day
//	$[last_day(yyyy-MM-dd)]            the day before
//	$[month_first_day(yyyy-MM-dd,-1)]  the first day of the month before
//	$[month_last_day(yyyy-MM-dd,-1)]   the last day of the month before
//	$[week_first_day(yyyy-MM-dd,-1)]   the Monday of the week before
//	$[week_last_day(yyyy-MM-dd,-1)]    the Sunday of the week before
//	$[month_begin(yyyyMMdd,N)]         N days after the first day of the month
//	$[month_end(yyyyMMdd,N)]           N days after the last day of the month
//	$[week_begin(yyyyMMdd,N)]          N days after the week's Monday
//	$[week_end(yyyyMMdd,N)]            N days after the week's Sunday
//	$[year_week(yyyy-MM-dd)]           year and week, "2026-14"; a second
//	                                   argument, 1 to 7, starts weeks on
//	                                   another day than Monday
//	$[timestamp(yyyyMMddHHmmss)]       Unix seconds; the argument may be
//	                                   any of the above but year_week
//
// The count of the *_first_day and *_last_day functions is in months or
// weeks and may be left out (0); that of month_begin, month_end,
// week_begin and week_end is in days, as in DolphinScheduler. Counts may
// be negative and be arithmetic: -1, 12*2, -(1+1).
//
// A format is a Java SimpleDateFormat pattern: yyyy, yy, MM, M, dd, d, HH,
// H, mm, m, ss, s and SSS (milliseconds), also D (day of the year), E
// (weekday name), u (weekday number), a, h, k, K, z, Z and X. Other ASCII
// letters are an error, but for T, which is text; other characters are
// text, and so is text in single quotes, where two quotes are one. A format ends
// with an offset in days if the text after its last '+' or '-' is
// arithmetic of digits, '*' and '/': yyyy-MM-dd-1 is the day before,
// formatted yyyy-MM-dd. Whole days of an offset are calendar days, the
// rest elapsed time.
//
// A time expression may itself refer to parameters, $[yyyyMMdd-${days}]:
// they are substituted before it is computed.
//
// # Escapes and errors
//
// $${ is a literal ${, and $$[ a literal $[; any other $ is itself.
// Errors in a template are an [*Error] with the offset of the '$' of the
// reference at fault.
package param

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Error is a syntax or reference error in a template.
type Error struct {
	// Offset is the byte offset in the template of the '$' that starts the
	// reference at fault.
	Offset int
	// Reason says what is wrong.
	Reason string
}

// Error returns the offset and the reason.
func (e *Error) Error() string {
	return fmt.Sprintf("param: offset %d: %s", e.Offset, e.Reason)
}

// Expand returns s with every ${name} replaced by vars[name] and every
// $[expr] replaced by the time expression computed at base (the schedule's
// fire time, or the start time), in base's location. An unknown name, a
// malformed reference or a bad time expression is an [*Error], the first
// one in s.
func Expand(s string, vars map[string]string, base time.Time) (string, error) {
	x := expander{vars: vars, base: base}
	var b strings.Builder
	if _, err := x.expand(&b, s, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Check reports the first syntax error in s, an [*Error], without values:
// an unclosed ${ or $[, an empty or malformed name, an unknown time
// function, a bad format, count or offset, a wrong number of arguments.
// Names need not be defined. A time expression that refers to parameters
// is checked only by [Expand], once they have values.
func Check(s string) error {
	x := expander{check: true}
	if _, err := x.expand(new(strings.Builder), s, 0); err != nil {
		return err
	}
	return nil
}

// Names returns the names of the parameters s refers to, in order of first
// use, without duplicates. It skips the malformed references Check reports.
func Names(s string) []string {
	var names []string
	for r := range refs(s, 0) {
		if !slices.Contains(names, r.name) {
			names = append(names, r.name)
		}
	}
	return names
}

// Layouts of the built-in parameters.
var (
	dateLayout     = mustLayout("yyyyMMdd")
	dateTimeLayout = mustLayout("yyyyMMddHHmmss")
)

// Builtins returns DolphinScheduler's built-in parameters at base, in
// base's location: system.biz.date, the day before formatted yyyyMMdd;
// system.biz.curdate, base formatted yyyyMMdd; and system.datetime, base
// formatted yyyyMMddHHmmss.
func Builtins(base time.Time) map[string]string {
	return map[string]string{
		"system.biz.date":    dateLayout.format(addDays(base, -1)),
		"system.biz.curdate": dateLayout.format(base),
		"system.datetime":    dateTimeLayout.format(base),
	}
}

// Resolve computes parameters whose definitions may refer to each other
// and to outer, such as a DAG's global parameters
//
//	{"dt": "$[yyyyMMdd-1]", "path": "/data/${dt}"}
//
// with outer holding [Builtins] and the values given for the run. Each
// definition is expanded as by [Expand] at base, after the definitions it
// refers to; a name in both defs and outer is the definition. It returns a
// new map of outer's parameters and the computed ones. An error names the
// parameter whose definition is at fault and wraps an [*Error] whose
// offset is in that definition; definitions that refer to each other in a
// cycle are one, which names them.
func Resolve(defs map[string]string, outer map[string]string, base time.Time) (map[string]string, error) {
	out := make(map[string]string, len(outer)+len(defs))
	maps.Copy(out, outer)

	const (
		unseen = iota
		visiting
		done
	)
	state := make(map[string]int, len(defs))
	// path is the chain of definitions being computed, each with the
	// offset of its reference to the next one.
	type step struct {
		name string
		at   int
	}
	var path []step
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			k := slices.IndexFunc(path, func(s step) bool { return s.name == name })
			cycle := make([]string, 0, len(path)-k+1)
			for _, s := range path[k:] {
				cycle = append(cycle, s.name)
			}
			cycle = append(cycle, name)
			return fmt.Errorf("parameter %s: %q: %w", name, defs[name], &Error{
				Offset: path[k].at,
				Reason: "parameters refer to each other in a cycle: " + strings.Join(cycle, " -> "),
			})
		}
		state[name] = visiting
		path = append(path, step{name: name})
		for r := range refs(defs[name], 0) {
			if _, ok := defs[r.name]; !ok {
				continue
			}
			path[len(path)-1].at = r.off
			if err := visit(r.name); err != nil {
				return err
			}
		}
		v, err := Expand(defs[name], out, base)
		if err != nil {
			return fmt.Errorf("parameter %s: %q: %w", name, defs[name], err)
		}
		out[name] = v
		path = path[:len(path)-1]
		state[name] = done
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expander expands a template, or only checks it.
type expander struct {
	vars  map[string]string
	base  time.Time
	check bool // only check the syntax: names need not be defined
}

// expand writes template s, whose first byte is at offset off of the
// whole template, expanded to b. It reports whether s refers to a
// parameter.
func (x *expander) expand(b *strings.Builder, s string, off int) (named bool, err error) {
	for seg := range segments(s, off) {
		if seg.err != nil {
			return named, seg.err
		}
		switch seg.kind {
		case segText:
			b.WriteString(seg.text)
		case segName:
			named = true
			if x.check {
				continue
			}
			v, ok := x.vars[seg.text]
			if !ok {
				return named, &Error{Offset: seg.off, Reason: fmt.Sprintf("unknown parameter %q", seg.text)}
			}
			b.WriteString(v)
		case segTime:
			var eb strings.Builder
			inner, err := x.expand(&eb, seg.text, seg.off+2)
			if err != nil {
				return named, err
			}
			named = named || inner
			if x.check && inner {
				continue // the expression is known once the parameters have values
			}
			expr := eb.String()
			compute, err := compileTime(expr)
			if err != nil {
				return named, &Error{Offset: seg.off, Reason: fmt.Sprintf("time expression %q: %v", expr, err)}
			}
			if !x.check {
				b.WriteString(compute(x.base))
			}
		}
	}
	return named, nil
}

// ref is a reference to a parameter.
type ref struct {
	name string
	off  int // of its '$'
}

// refs yields the well-formed references of template s, whose first byte
// is at offset off, in order, those in time expressions too.
func refs(s string, off int) iter.Seq[ref] {
	return func(yield func(ref) bool) {
		for seg := range segments(s, off) {
			switch {
			case seg.err != nil:
			case seg.kind == segName:
				if !yield(ref{seg.text, seg.off}) {
					return
				}
			case seg.kind == segTime:
				for r := range refs(seg.text, seg.off+2) {
					if !yield(r) {
						return
					}
				}
			}
		}
	}
}

// segKind is what a segment of a template is.
type segKind int

const (
	segText segKind = iota // literal text
	segName                // ${name}
	segTime                // $[expr]
)

// segment is a piece of a template.
type segment struct {
	kind segKind
	off  int    // byte offset in the whole template: of the text, or of the '$'
	text string // the text, the name, or the time expression
	err  *Error // a malformed reference; after an unclosed one, the walk ends
}

// segments yields the segments of template s, whose first byte is at
// offset off of the whole template.
func segments(s string, off int) iter.Seq[segment] {
	return func(yield func(segment) bool) {
		lit := 0 // where the text not yet yielded begins
		text := func(end int) bool {
			return end <= lit || yield(segment{kind: segText, off: off + lit, text: s[lit:end]})
		}
		for i := 0; i < len(s); {
			if s[i] != '$' || i+1 == len(s) {
				i++
				continue
			}
			next := s[i+1]
			if next == '$' && i+2 < len(s) && (s[i+2] == '{' || s[i+2] == '[') {
				// An escape: drop a '$', and the "${" or "$[" is text.
				if !text(i) {
					return
				}
				lit = i + 1
				i += 3
				continue
			}
			if next != '{' && next != '[' {
				i++
				continue
			}
			if !text(i) {
				return
			}
			closer, kind := byte('}'), segName
			if next == '[' {
				closer, kind = ']', segTime
			}
			j := strings.IndexByte(s[i+2:], closer)
			if j < 0 {
				yield(segment{off: off + i, err: &Error{Offset: off + i, Reason: fmt.Sprintf("%s is not closed by %q", s[i:i+2], closer)}})
				return
			}
			seg := segment{kind: kind, off: off + i, text: s[i+2 : i+2+j]}
			if kind == segName {
				seg.text = strings.TrimSpace(seg.text)
				if reason := badName(seg.text); reason != "" {
					seg.err = &Error{Offset: off + i, Reason: reason}
				}
			} else if strings.TrimSpace(seg.text) == "" {
				seg.err = &Error{Offset: off + i, Reason: "empty time expression"}
			}
			lit = i + 2 + j + 1
			i = lit
			if !yield(seg) {
				return
			}
		}
		text(len(s))
	}
}

// badName says what is wrong with a parameter's name, if anything.
func badName(name string) string {
	if name == "" {
		return "empty parameter name"
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			return fmt.Sprintf("parameter name %q has %q: a name is letters, digits, '_', '.' and '-'", name, r)
		}
	}
	return ""
}

// mustLayout compiles a layout known to be good.
func mustLayout(p string) layout {
	l, err := compileLayout(p)
	if err != nil {
		panic(err)
	}
	return l
}
