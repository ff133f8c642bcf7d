package param

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// This file reads and computes $[...] time expressions, after
// DolphinScheduler's TimePlaceholderUtils: a Java SimpleDateFormat pattern
// with an optional day offset, or one of its functions.

const (
	// maxNumber bounds the numbers of an expression and every step of its
	// arithmetic, far from overflow.
	maxNumber = 1_000_000_000
	// maxCount bounds a function's count of days, weeks or months.
	maxCount = 100_000
	// maxOffsetMinutes bounds an offset: 100,000 days, inside what a
	// time.Duration holds.
	maxOffsetMinutes = maxCount * 24 * 60
)

// compileTime reads a time expression (the text between $[ and ]) and
// returns the function that computes its value at a base time.
func compileTime(expr string) (func(base time.Time) string, error) {
	name, inner, isCall, err := parseCall(expr)
	if err != nil {
		return nil, err
	}
	if isCall {
		switch name {
		case "year_week":
			return compileYearWeek(inner)
		case "timestamp":
			at, _, err := compileDate(inner)
			if err != nil {
				return nil, fmt.Errorf("timestamp: %w", err)
			}
			return func(base time.Time) string { return strconv.FormatInt(at(base).Unix(), 10) }, nil
		}
	}
	at, l, err := compileDate(expr)
	if err != nil {
		return nil, err
	}
	return func(base time.Time) string { return l.format(at(base)) }, nil
}

// dateFunc is a function of a time expression that computes a time, shown
// in the format that is its first argument.
type dateFunc struct {
	params   string // the parameters, for messages
	min, max int    // how many arguments it takes
	at       func(t time.Time, n int) time.Time
}

// dateFuncs are DolphinScheduler's functions by name. The count of the
// old four (month_begin, month_end, week_begin, week_end) is in days; the
// count of the *_first_day and *_last_day ones is in months or weeks.
var dateFuncs = map[string]dateFunc{
	"add_months":      {"format, months", 2, 2, addMonths},
	"this_day":        {"format", 1, 1, func(t time.Time, _ int) time.Time { return t }},
	"last_day":        {"format", 1, 1, func(t time.Time, _ int) time.Time { return addDays(t, -1) }},
	"month_begin":     {"format, days", 2, 2, func(t time.Time, n int) time.Time { return addDays(firstOfMonth(t), n) }},
	"month_end":       {"format, days", 2, 2, func(t time.Time, n int) time.Time { return addDays(lastOfMonth(t), n) }},
	"week_begin":      {"format, days", 2, 2, func(t time.Time, n int) time.Time { return addDays(monday(t), n) }},
	"week_end":        {"format, days", 2, 2, func(t time.Time, n int) time.Time { return addDays(sunday(t), n) }},
	"month_first_day": {"format[, months]", 1, 2, func(t time.Time, n int) time.Time { return addMonths(firstOfMonth(t), n) }},
	"month_last_day":  {"format[, months]", 1, 2, func(t time.Time, n int) time.Time { return lastOfMonth(addMonths(t, n)) }},
	"week_first_day":  {"format[, weeks]", 1, 2, func(t time.Time, n int) time.Time { return addDays(monday(t), 7*n) }},
	"week_last_day":   {"format[, weeks]", 1, 2, func(t time.Time, n int) time.Time { return addDays(sunday(t), 7*n) }},
}

// compileDate reads an expression that computes a time: a format with an
// optional offset, or a call of one of dateFuncs. It returns the
// computation and the layout of the format.
func compileDate(expr string) (func(time.Time) time.Time, layout, error) {
	name, inner, isCall, err := parseCall(expr)
	if err != nil {
		return nil, nil, err
	}
	if !isCall {
		format, minutes, err := splitOffset(expr)
		if err != nil {
			return nil, nil, err
		}
		l, err := compileLayout(format)
		if err != nil {
			return nil, nil, err
		}
		return func(t time.Time) time.Time { return addMinutes(t, minutes) }, l, nil
	}
	f, ok := dateFuncs[name]
	if !ok {
		if name == "year_week" || name == "timestamp" {
			return nil, nil, fmt.Errorf("%s does not compute a time", name)
		}
		return nil, nil, fmt.Errorf("unknown time function %q", name)
	}
	args := strings.Split(inner, ",")
	if len(args) < f.min || len(args) > f.max {
		return nil, nil, fmt.Errorf("%s takes (%s), not %d argument(s)", name, f.params, len(args))
	}
	l, err := compileLayout(strings.TrimSpace(args[0]))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	n := 0
	if len(args) == 2 {
		if n, err = evalCount(args[1]); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return func(t time.Time) time.Time { return f.at(t, n) }, l, nil
}

// compileYearWeek reads the arguments of year_week: a format and an
// optional first day of the week, 1 (Monday, the default) to 7 (Sunday).
// Its value is the year and the week of the year, as Java's Calendar
// counts them with weeks of at least four days in the year: with weeks from
// Monday, ISO 8601's week. The year is the calendar year of the date, as in
// DolphinScheduler, so the last days of December can be in week 01 and the
// first days of January in week 52 or 53. The two are joined by '-' if the
// format has one; the format is otherwise unused.
func compileYearWeek(inner string) (func(time.Time) string, error) {
	args := strings.Split(inner, ",")
	if len(args) > 2 {
		return nil, fmt.Errorf("year_week takes (format[, first day of the week]), not %d arguments", len(args))
	}
	format := strings.TrimSpace(args[0])
	if format == "" {
		return nil, errors.New("year_week: empty format")
	}
	first := time.Monday
	if len(args) == 2 {
		n, err := evalCount(args[1])
		if err != nil {
			return nil, fmt.Errorf("year_week: %w", err)
		}
		if n < 1 || n > 7 {
			return nil, fmt.Errorf("year_week: first day of the week %d: want 1 (Monday) to 7 (Sunday)", n)
		}
		first = time.Weekday(n % 7)
	}
	sep := ""
	if strings.Contains(format, "-") {
		sep = "-"
	}
	return func(t time.Time) string {
		return fmt.Sprintf("%d%s%02d", t.Year(), sep, weekOfYear(t, first))
	}, nil
}

// parseCall reads expr as a function call, name(inner). An identifier is
// a function's name if it has a '_' or a letter that is not a lowercase
// format letter; otherwise "yyyy(MM)" is a format with parentheses in it.
func parseCall(expr string) (name, inner string, isCall bool, err error) {
	s := strings.TrimSpace(expr)
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] == '_') {
		i++
	}
	if i == 0 || i == len(s) || s[i] != '(' {
		return "", "", false, nil
	}
	name = s[:i]
	if strings.Trim(name, "ydhmsakuz") == "" {
		return "", "", false, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", "", false, fmt.Errorf("%s( is not closed by a ) at the end", name)
	}
	return name, s[i+1 : len(s)-1], true, nil
}

// splitOffset splits a format from the day offset that ends it, as
// DolphinScheduler does: the offset follows the last '+' or '-' of expr if
// only digits, '*', '/' and spaces follow it, the first of them a digit. It
// counts days ("1", "7*2") or fractions of a day ("1/24" an hour, "1/24/60"
// a minute), computed in whole minutes as 24*60*(the product before the
// first '/') and then the rest from left to right.
func splitOffset(expr string) (format string, minutes int, err error) {
	i := strings.LastIndexAny(expr, "+-")
	if i < 0 {
		return expr, 0, nil
	}
	tail := strings.TrimSpace(expr[i+1:])
	if tail == "" || tail[0] < '0' || tail[0] > '9' || strings.Trim(tail, "0123456789*/ ") != "" {
		return expr, 0, nil
	}
	minutes, err = offsetMinutes(tail)
	if err != nil {
		return "", 0, fmt.Errorf("offset %q: %w", expr[i:], err)
	}
	if expr[i] == '-' {
		minutes = -minutes
	}
	return strings.TrimRight(expr[:i], " "), minutes, nil
}

// offsetMinutes computes an offset's digits and '*' and '/' in minutes.
func offsetMinutes(tail string) (int, error) {
	v, op, s := 24*60, byte('*'), tail
	for {
		s = strings.TrimLeft(s, " ")
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			return 0, fmt.Errorf("want a number after %q", op)
		}
		n, err := strconv.Atoi(s[:j])
		if err != nil || n > maxNumber {
			return 0, errors.New("number out of range")
		}
		if v, err = apply(v, op, n); err != nil {
			return 0, err
		}
		s = strings.TrimLeft(s[j:], " ")
		if s == "" {
			break
		}
		if s[0] != '*' && s[0] != '/' {
			return 0, fmt.Errorf("want '*' or '/' at %q", s)
		}
		op, s = s[0], s[1:]
	}
	if v > maxOffsetMinutes {
		return 0, errors.New("more than 100000 days")
	}
	return v, nil
}

// apply computes a op b, in range.
func apply(a int, op byte, b int) (int, error) {
	var v int
	switch op {
	case '+':
		v = a + b
	case '-':
		v = a - b
	case '*':
		v = a * b // both at most maxNumber: no overflow
	case '/':
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		v = a / b // toward zero, as Java's int division
	}
	if v > maxNumber || v < -maxNumber {
		return 0, errors.New("number out of range")
	}
	return v, nil
}

// evalCount computes a function's count: integer arithmetic with + - * /,
// parentheses and signs ("-1", "12*2", "-(1+1)"), as DolphinScheduler's
// calculate does.
func evalCount(s string) (int, error) {
	e := &arith{s: strings.TrimSpace(s)}
	if e.s == "" {
		return 0, errors.New("empty number")
	}
	v, err := e.sum()
	if err == nil && e.peek() != 0 {
		err = fmt.Errorf("unexpected %q", e.s[e.i:])
	}
	if err != nil {
		return 0, fmt.Errorf("number %q: %w", strings.TrimSpace(s), err)
	}
	if v > maxCount || v < -maxCount {
		return 0, fmt.Errorf("number %q: more than %d", strings.TrimSpace(s), maxCount)
	}
	return v, nil
}

// arith reads integer arithmetic by recursive descent. Spaces may
// separate numbers and operators.
type arith struct {
	s string
	i int
}

// peek returns the next byte that is not a space, 0 at the end.
func (e *arith) peek() byte {
	for e.i < len(e.s) && (e.s[e.i] == ' ' || e.s[e.i] == '\t') {
		e.i++
	}
	if e.i == len(e.s) {
		return 0
	}
	return e.s[e.i]
}

func (e *arith) sum() (int, error) {
	v, err := e.product()
	for err == nil && (e.peek() == '+' || e.peek() == '-') {
		op := e.s[e.i]
		e.i++
		var w int
		if w, err = e.product(); err == nil {
			v, err = apply(v, op, w)
		}
	}
	return v, err
}

func (e *arith) product() (int, error) {
	v, err := e.unary()
	for err == nil && (e.peek() == '*' || e.peek() == '/') {
		op := e.s[e.i]
		e.i++
		var w int
		if w, err = e.unary(); err == nil {
			v, err = apply(v, op, w)
		}
	}
	return v, err
}

func (e *arith) unary() (int, error) {
	if c := e.peek(); c == '+' || c == '-' {
		neg := e.s[e.i] == '-'
		e.i++
		v, err := e.unary()
		if neg {
			v = -v
		}
		return v, err
	}
	if e.peek() == '(' {
		e.i++
		v, err := e.sum()
		if err != nil {
			return 0, err
		}
		if e.peek() != ')' {
			return 0, errors.New("missing )")
		}
		e.i++
		return v, nil
	}
	j := e.i
	for j < len(e.s) && e.s[j] >= '0' && e.s[j] <= '9' {
		j++
	}
	if j == e.i {
		if e.i == len(e.s) {
			return 0, errors.New("want a number at the end")
		}
		return 0, fmt.Errorf("want a number at %q", e.s[e.i:])
	}
	v, err := strconv.Atoi(e.s[e.i:j])
	if err != nil || v > maxNumber {
		return 0, errors.New("number out of range")
	}
	e.i = j
	return v, nil
}

// Calendar arithmetic, in t's location, keeping the time of day as Java's
// Calendar does.

// addDays adds n calendar days.
func addDays(t time.Time, n int) time.Time {
	if n == 0 {
		return t
	}
	y, m, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, m, d+n, h, mi, s, t.Nanosecond(), t.Location())
}

// addMinutes adds an offset: its whole days as calendar days and the rest
// as elapsed time. Without a daylight saving change in between, that is
// DolphinScheduler's adding of minutes; across one, a day stays a day.
func addMinutes(t time.Time, minutes int) time.Time {
	return addDays(t, minutes/(24*60)).Add(time.Duration(minutes%(24*60)) * time.Minute)
}

// addMonths adds n months, ending on the target month's last day if it is
// shorter (January 31 and a month is February 28, or 29), as Java's
// Calendar does.
func addMonths(t time.Time, n int) time.Time {
	if n == 0 {
		return t
	}
	y, m, d := t.Date()
	h, mi, s := t.Clock()
	first := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	if last := daysIn(first.Year(), first.Month()); d > last {
		d = last
	}
	return time.Date(first.Year(), first.Month(), d, h, mi, s, t.Nanosecond(), t.Location())
}

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// firstOfMonth returns the first day of t's month.
func firstOfMonth(t time.Time) time.Time { return addDays(t, 1-t.Day()) }

// lastOfMonth returns the last day of t's month.
func lastOfMonth(t time.Time) time.Time {
	return addDays(t, daysIn(t.Year(), t.Month())-t.Day())
}

// monday returns the Monday of t's week, Monday to Sunday.
func monday(t time.Time) time.Time { return addDays(t, -daysSinceMonday(t)) }

// sunday returns the Sunday of t's week, Monday to Sunday.
func sunday(t time.Time) time.Time { return addDays(t, 6-daysSinceMonday(t)) }

func daysSinceMonday(t time.Time) int { return (int(t.Weekday()) + 6) % 7 }

// weekOfYear returns the week of t's year, as Java's Calendar counts it
// with weeks from first and at least four days of the year in week 1: a
// day before week 1 is in the last week of the year before, and a day in
// the next year's week 1 is in week 1.
func weekOfYear(t time.Time, first time.Weekday) int {
	y := t.Year()
	day := civilDay(y, t.Month(), t.Day())
	start := week1(y, first)
	switch {
	case day < start:
		start = week1(y-1, first)
	case day >= week1(y+1, first):
		return 1
	}
	return (day-start)/7 + 1
}

// week1 returns the day week 1 of year y begins.
func week1(y int, first time.Weekday) int {
	jan1 := civilDay(y, time.January, 1)
	into := (int(weekdayOf(jan1)) - int(first) + 7) % 7 // days of the week before January 1
	start := jan1 - into
	if 7-into < 4 {
		start += 7
	}
	return start
}

// civilDay returns the number of the day y-m-d, counted from 1970-01-01.
func civilDay(y int, m time.Month, d int) int {
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / (24 * 60 * 60))
}

// weekdayOf returns the weekday of a civilDay.
func weekdayOf(day int) time.Weekday {
	return time.Weekday(((day+4)%7 + 7) % 7) // 1970-01-01 was a Thursday
}

// A layout is a compiled Java SimpleDateFormat pattern.
type layout []field

// field is a run of one pattern letter, or literal text.
type field struct {
	letter byte   // the pattern letter; 0 for text
	count  int    // how many times the letter is repeated
	text   string // the text, if letter is 0
}

// formatLetters are the pattern letters a layout supports: y M d H m s S as
// DolphinScheduler's documentation uses them, and the other common ones.
const formatLetters = "yMdDEuahHkKmsSzZX"

// compileLayout reads a Java SimpleDateFormat pattern. ASCII letters are
// pattern letters, except 'T', which is text as in ISO 8601; other
// characters are text; text in single quotes is text; two single quotes
// are one.
func compileLayout(p string) (layout, error) {
	if p == "" {
		return nil, errors.New("empty format")
	}
	var l layout
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			l = append(l, field{text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'' && i+1 < len(p) && p[i+1] == '\'':
			text.WriteByte('\'')
			i += 2
		case c == '\'':
			i++
			for {
				k := strings.IndexByte(p[i:], '\'')
				if k < 0 {
					return nil, fmt.Errorf("format %q: unterminated quote", p)
				}
				text.WriteString(p[i : i+k])
				i += k + 1
				if i == len(p) || p[i] != '\'' {
					break
				}
				text.WriteByte('\'') // '' inside quotes
				i++
			}
		case (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && c != 'T':
			n := 1
			for i+n < len(p) && p[i+n] == c {
				n++
			}
			switch {
			case c == 'Y':
				return nil, fmt.Errorf("format %q: 'Y' is the week-based year, which is not supported; 'y' is the year", p)
			case strings.IndexByte(formatLetters, c) < 0:
				return nil, fmt.Errorf("format %q: format letter %q is not supported (quote text: 'text')", p, c)
			case c == 'X' && n > 3:
				return nil, fmt.Errorf("format %q: at most three X", p)
			}
			flush()
			l = append(l, field{letter: c, count: n})
			i += n
		default:
			text.WriteByte(c)
			i++
		}
	}
	flush()
	return l, nil
}

// format formats t, in its location.
func (l layout) format(t time.Time) string {
	var b []byte
	for _, f := range l {
		n := f.count
		switch f.letter {
		case 0:
			b = append(b, f.text...)
		case 'y':
			if n == 2 {
				b = appendPadded(b, t.Year()%100, 2)
			} else {
				b = appendPadded(b, t.Year(), n)
			}
		case 'M':
			switch {
			case n >= 4:
				b = append(b, t.Month().String()...)
			case n == 3:
				b = append(b, t.Month().String()[:3]...)
			default:
				b = appendPadded(b, int(t.Month()), n)
			}
		case 'd':
			b = appendPadded(b, t.Day(), n)
		case 'D':
			b = appendPadded(b, t.YearDay(), n)
		case 'E':
			if n >= 4 {
				b = append(b, t.Weekday().String()...)
			} else {
				b = append(b, t.Weekday().String()[:3]...)
			}
		case 'u':
			b = appendPadded(b, daysSinceMonday(t)+1, n)
		case 'a':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'H':
			b = appendPadded(b, t.Hour(), n)
		case 'k':
			b = appendPadded(b, (t.Hour()+23)%24+1, n)
		case 'K':
			b = appendPadded(b, t.Hour()%12, n)
		case 'h':
			b = appendPadded(b, (t.Hour()+11)%12+1, n)
		case 'm':
			b = appendPadded(b, t.Minute(), n)
		case 's':
			b = appendPadded(b, t.Second(), n)
		case 'S':
			b = appendPadded(b, t.Nanosecond()/1e6, n) // milliseconds, as in Java
		case 'z':
			b = t.AppendFormat(b, "MST")
		case 'Z':
			b = t.AppendFormat(b, "-0700")
		case 'X':
			b = t.AppendFormat(b, [...]string{"Z07", "Z0700", "Z07:00"}[n-1])
		}
	}
	return string(b)
}

// appendPadded appends v in decimal with at least width digits.
func appendPadded(b []byte, v, width int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	for k := len(strconv.Itoa(v)); k < width; k++ {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(v), 10)
}
