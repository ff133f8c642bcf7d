package param

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin on machines without a zoneinfo database
)

// cst is a fixed zone east of UTC: a time expression must not be computed
// in UTC.
var cst = time.FixedZone("CST", 8*3600)

// base is a Tuesday, the last day of a 31-day month, in the afternoon.
var base = time.Date(2026, 3, 31, 14, 5, 9, 123_000_000, cst)

func at(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 14, 5, 9, 0, cst) }

func TestExpandTime(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		base time.Time
		want string
	}{
		// Formats.
		{"$[yyyyMMdd]", base, "20260331"},
		{"$[yyyy-MM-dd]", base, "2026-03-31"},
		{"$[yyyyMMddHHmmss]", base, "20260331140509"},
		{"$[yyyy-MM-dd HH:mm:ss.SSS]", base, "2026-03-31 14:05:09.123"},
		{"$[yy/M/d H:m:s]", base, "26/3/31 14:5:9"},
		{"$[yy/M/d]", at(2009, 1, 2), "09/1/2"},
		{"$[HHmmss]", base, "140509"},
		{"$[yyyy-MM-dd'T'HH:mm:ss]", base, "2026-03-31T14:05:09"},
		{"$[yyyy-MM-ddTHH:mm]", base, "2026-03-31T14:05"},
		{"$['day' d 'of' M]", base, "day 31 of 3"},
		{"$['it''s' yyyy '']", base, "it's 2026 '"},
		{"$[''yyyy'']", base, "'2026'"},
		{"$[yyyy年MM月dd日]", base, "2026年03月31日"},
		{"$[yyyy/MM/dd]", base, "2026/03/31"},
		{"$[hh:mm a, EEE EEEE, MMM MMMM, D, u]", base, "02:05 PM, Tue Tuesday, Mar March, 90, 2"},
		{"$[k K h H]", time.Date(2026, 3, 31, 0, 7, 0, 0, cst), "24 0 12 0"},
		{"$[XXX X Z z]", base, "+08:00 +08 +0800 CST"},
		{"$[XXX]", base.UTC(), "Z"},
		{"$[y yyy yyyyy S SSSSSS]", base, "2026 2026 02026 123 000123"},
		{"$[yyyyMMdd]", time.Date(2026, 3, 31, 23, 30, 0, 0, cst), "20260331"}, // 15:30 UTC: the base's day, not UTC's

		// Offsets: days, weeks, hours, minutes.
		{"$[yyyyMMdd-1]", base, "20260330"},
		{"$[yyyyMMdd+1]", base, "20260401"},
		{"$[yyyyMMdd-31]", base, "20260228"},
		{"$[yyyy-MM-dd-1]", base, "2026-03-30"},
		{"$[yyyy-MM-dd+1]", base, "2026-04-01"},
		{"$[yyyy-MM-dd HH:mm:ss-1]", base, "2026-03-30 14:05:09"},
		{"$[yyyyMMdd-1*7]", base, "20260324"},
		{"$[yyyyMMdd+7*2]", base, "20260414"},
		{"$[yyyyMMdd - 1]", base, "20260330"},
		{"$[HHmmss-1/24]", base, "130509"},
		{"$[HHmmss+3/24]", base, "170509"},
		{"$[yyyyMMddHHmmss-1/24/60]", base, "20260331140409"},
		{"$[yyyyMMddHHmmss+90/24/60]", base, "20260331153509"},
		{"$[yyyyMMddHHmmss-1/48]", base, "20260331133509"},
		{"$[yyyyMMddHH+10/24]", base, "2026040100"},
		{"$[yyyyMMddHH-15/24]", base, "2026033023"},
		{"$[yyyyMMdd-0]", base, "20260331"},
		{"$[yyyy-MM-01]", base, "2026-03"}, // as in DolphinScheduler: "-01" is a day's offset
		{"$[yyyyMMdd+1]", at(2024, 2, 28), "20240229"},
		{"$[yyyyMMdd+1]", at(2026, 12, 31), "20270101"},

		// add_months clamps to the end of a shorter month.
		{"$[add_months(yyyyMMdd,1)]", base, "20260430"},
		{"$[add_months(yyyyMMdd,-1)]", base, "20260228"},
		{"$[add_months(yyyyMMdd,-13)]", base, "20250228"},
		{"$[add_months(yyyyMMdd,12*2)]", base, "20280331"},
		{"$[add_months(yyyyMMdd,-12)]", base, "20250331"},
		{"$[add_months( yyyy-MM-dd , -(1+1) )]", base, "2026-01-31"},
		{"$[add_months(yyyyMMdd,+1)]", base, "20260430"},
		{"$[add_months(yyyyMMdd,0)]", base, "20260331"},
		{"$[add_months(yyyyMMdd,1)]", at(2024, 1, 31), "20240229"},
		{"$[add_months(yyyyMMdd,1)]", at(2025, 1, 31), "20250228"},
		{"$[add_months(yyyyMMdd,12)]", at(2024, 2, 29), "20250228"},
		{"$[add_months(yyyyMMdd,48)]", at(2024, 2, 29), "20280229"},
		{"$[add_months(yyyyMMdd,-1)]", at(2026, 1, 15), "20251215"},
		{"$[add_months(yyyyMMddHHmmss,1)]", base, "20260430140509"},
		{"$[add_months(yyyyMMdd-1,1)]", base, "20260430-1"}, // as in DolphinScheduler: no offset in an argument

		// this_day and last_day (the day before, as in DolphinScheduler).
		{"$[this_day(yyyy-MM-dd)]", base, "2026-03-31"},
		{"$[last_day(yyyy-MM-dd)]", base, "2026-03-30"},
		{"$[last_day(yyyyMMdd)]", at(2024, 3, 1), "20240229"},
		{"$[last_day(yyyyMMdd)]", at(2026, 1, 1), "20251231"},

		// month_begin and month_end: N days from the month's first or last day.
		{"$[month_begin(yyyyMMdd,0)]", base, "20260301"},
		{"$[month_begin(yyyyMMdd,-1)]", base, "20260228"},
		{"$[month_begin(yyyyMMdd,2)]", base, "20260303"},
		{"$[month_end(yyyyMMdd,0)]", base, "20260331"},
		{"$[month_end(yyyyMMdd,1)]", base, "20260401"},
		{"$[month_end(yyyyMMdd,0)]", at(2024, 2, 10), "20240229"},
		{"$[month_end(yyyyMMdd,0)]", at(2100, 2, 1), "21000228"},
		{"$[month_end(yyyyMMdd,0)]", at(2000, 2, 1), "20000229"},
		{"$[month_end(yyyyMMdd HH:mm,0)]", base, "20260331 14:05"},

		// month_first_day and month_last_day: N months away.
		{"$[month_first_day(yyyy-MM-dd)]", base, "2026-03-01"},
		{"$[month_first_day(yyyy-MM-dd,-1)]", base, "2026-02-01"},
		{"$[month_first_day(yyyy-MM-dd,1)]", base, "2026-04-01"},
		{"$[month_first_day(yyyy-MM-dd,-3)]", base, "2025-12-01"},
		{"$[month_last_day(yyyy-MM-dd)]", base, "2026-03-31"},
		{"$[month_last_day(yyyy-MM-dd,-1)]", base, "2026-02-28"},
		{"$[month_last_day(yyyy-MM-dd,1)]", base, "2026-04-30"},
		{"$[month_last_day(yyyy-MM-dd,-1)]", at(2024, 3, 31), "2024-02-29"},

		// week_begin and week_end: N days from the week's Monday or Sunday.
		{"$[week_begin(yyyyMMdd,0)]", base, "20260330"},
		{"$[week_begin(yyyyMMdd,-1)]", base, "20260329"},
		{"$[week_begin(yyyyMMdd,-7)]", base, "20260323"},
		{"$[week_end(yyyyMMdd,0)]", base, "20260405"},
		{"$[week_end(yyyyMMdd,-7)]", base, "20260329"},
		{"$[week_begin(yyyyMMdd,0)]", at(2026, 3, 30), "20260330"}, // a Monday
		{"$[week_end(yyyyMMdd,0)]", at(2026, 3, 30), "20260405"},
		{"$[week_begin(yyyyMMdd,0)]", at(2026, 4, 5), "20260330"}, // a Sunday: the week before's Monday
		{"$[week_end(yyyyMMdd,0)]", at(2026, 4, 5), "20260405"},

		// week_first_day and week_last_day: N weeks away.
		{"$[week_first_day(yyyy-MM-dd)]", base, "2026-03-30"},
		{"$[week_first_day(yyyy-MM-dd,-1)]", base, "2026-03-23"},
		{"$[week_last_day(yyyy-MM-dd)]", base, "2026-04-05"},
		{"$[week_last_day(yyyy-MM-dd,-1)]", base, "2026-03-29"},
		{"$[week_first_day(yyyy-MM-dd,1)]", base, "2026-04-06"},
		{"$[week_first_day(yyyy-MM-dd)]", at(2025, 12, 31), "2025-12-29"}, // a week across the new year
		{"$[week_last_day(yyyy-MM-dd)]", at(2025, 12, 31), "2026-01-04"},
		{"$[week_first_day(yyyy-MM-dd)]", at(2024, 3, 3), "2024-02-26"},

		// The examples of DolphinScheduler's documentation.
		{"$[this_day(yyyy-MM-dd)]", at(2022, 8, 26), "2022-08-26"},
		{"$[last_day(yyyy-MM-dd)]", at(2022, 8, 26), "2022-08-25"},
		{"$[year_week(yyyy-MM-dd)]", at(2022, 8, 26), "2022-34"},
		{"$[year_week(yyyy-MM-dd,5)]", at(2022, 8, 26), "2022-35"},
		{"$[month_first_day(yyyy-MM-dd,-1)]", at(2022, 8, 26), "2022-07-01"},
		{"$[month_last_day(yyyy-MM-dd,-1)]", at(2022, 8, 28), "2022-07-31"},
		{"$[week_first_day(yyyy-MM-dd,-1)]", at(2022, 8, 26), "2022-08-15"},
		{"$[week_last_day(yyyy-MM-dd,-1)]", at(2022, 8, 26), "2022-08-21"},

		// year_week: ISO weeks from Monday; the calendar year.
		{"$[year_week(yyyy-MM-dd)]", base, "2026-14"},
		{"$[year_week(yyyyMMdd)]", base, "202614"},
		{"$[year_week( yyyy-MM-dd , 1 )]", base, "2026-14"},
		{"$[year_week(yyyy-MM-dd)]", at(2026, 1, 5), "2026-02"},
		{"$[year_week(yyyy-MM-dd)]", at(2026, 1, 1), "2026-01"},   // a Thursday: week 1
		{"$[year_week(yyyy-MM-dd)]", at(2021, 1, 1), "2021-53"},   // a Friday: the last week of 2020
		{"$[year_week(yyyy-MM-dd)]", at(2024, 12, 30), "2024-01"}, // a Monday: the first week of 2025
		{"$[year_week(yyyy-MM-dd)]", at(2026, 12, 31), "2026-53"},
		{"$[year_week(yyyy-MM-dd,7)]", at(2026, 1, 3), "2026-53"}, // weeks from Sunday: week 1 of 2026 begins on the 4th
		{"$[year_week(yyyy-MM-dd,7)]", at(2026, 1, 4), "2026-01"},
		{"$[year_week(yyyy-MM-dd,7)]", at(2026, 4, 5), "2026-14"},
		{"$[year_week(yyyy-MM-dd,1)]", at(2026, 4, 5), "2026-14"},

		// timestamp: Unix seconds.
		{"$[timestamp(yyyyMMddHHmmss)]", base, "1774937109"},
		{"$[timestamp(yyyyMMddHHmmss-1)]", base, "1774850709"},
		{"$[timestamp(yyyyMMddHHmmss-1/24)]", base, "1774933509"},
		{"$[timestamp(add_months(yyyyMMddHHmmss,1))]", base, "1777529109"},
		{"$[timestamp(yyyyMMddHHmmss)]", base.UTC(), "1774937109"},

		// Several in one text, and around text.
		{"dt=$[yyyyMMdd-1] hour=$[HH] $[week_first_day(yyyyMMdd,0)]/x", base, "dt=20260330 hour=14 20260330/x"},
	} {
		got, err := Expand(c.tmpl, nil, c.base)
		if err != nil {
			t.Errorf("Expand(%q) at %s: %v", c.tmpl, c.base, err)
			continue
		}
		if got != c.want {
			t.Errorf("Expand(%q) at %s = %q; want %q", c.tmpl, c.base, got, c.want)
		}
		if err := Check(c.tmpl); err != nil {
			t.Errorf("Check(%q): %v", c.tmpl, err)
		}
	}
}

func TestExpandDaylightSaving(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Clocks went forward on 2026-03-29: that day had 23 hours.
	b := time.Date(2026, 3, 30, 0, 30, 0, 0, berlin)
	for tmpl, want := range map[string]string{
		"$[yyyyMMdd HH:mm-1]":              "20260329 00:30", // a day is a calendar day
		"$[yyyyMMdd HH:mm-1*7]":            "20260323 00:30",
		"$[yyyyMMdd HH:mm-1/24]":           "20260329 23:30", // an hour is an hour
		"$[yyyyMMdd HH:mm-25/24]":          "20260328 23:30", // a day and an hour
		"$[yyyyMMdd HH:mm XXX-24/24]":      "20260329 00:30 +01:00",
		"$[last_day(yyyyMMdd HH:mm)]":      "20260329 00:30",
		"$[add_months(yyyyMMdd HH:mm,-1)]": "20260228 00:30",
	} {
		got, err := Expand(tmpl, nil, b)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tmpl, got, err, want)
		}
	}
}

func TestExpandParameters(t *testing.T) {
	vars := map[string]string{
		"dt":              "20260330",
		"system.biz.date": "20260330",
		"my-param_2":      "x",
		"表":               "orders",
		"empty":           "",
		"ref":             "${dt}",
		"time":            "$[yyyy]",
		"dollar":          "$",
	}
	for _, c := range []struct{ tmpl, want string }{
		{"", ""},
		{"no parameters", "no parameters"},
		{"${dt}", "20260330"},
		{"/data/${dt}/part", "/data/20260330/part"},
		{"${ dt }", "20260330"},
		{"${\tdt\n}", "20260330"},
		{"${system.biz.date}", "20260330"},
		{"${my-param_2}", "x"},
		{"select * from ${表}", "select * from orders"},
		{"[${empty}]", "[]"},
		{"${dt}${dt}", "2026033020260330"},
		{"${ref}", "${dt}"},        // a value is not expanded again
		{"${time}", "$[yyyy]"},     // not even a time expression
		{"${dollar}{dt}", "${dt}"}, // nor what it makes with the text after it
		{"$[yyyy-MM-dd-${empty}0]", "2026-03-31"},
		{"$[yyyyMMdd-${dollar}]", "20260331-$"},
		{"${dt}-$[HH]", "20260330-14"},
		// Escapes.
		{"$${dt}", "${dt}"},
		{"$$[yyyyMMdd]", "$[yyyyMMdd]"},
		{"$${dt} ${dt}", "${dt} 20260330"},
		{"$$${dt}", "$${dt}"}, // "$" and then the escape
		{"cost $5, $$, a$", "cost $5, $$, a$"},
		{"$", "$"},
		{"$$", "$$"},
		{"echo $HOME $1 $(date)", "echo $HOME $1 $(date)"},
		{"$${", "${"},
		{"$$[", "$["},
		{"}{]$", "}{]$"},
	} {
		got, err := Expand(c.tmpl, vars, base)
		if err != nil {
			t.Errorf("Expand(%q): %v", c.tmpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("Expand(%q) = %q; want %q", c.tmpl, got, c.want)
		}
		if err := Check(c.tmpl); err != nil {
			t.Errorf("Check(%q): %v", c.tmpl, err)
		}
	}
}

func TestExpandNestedParameter(t *testing.T) {
	vars := map[string]string{"days": "7", "fmt": "yyyy-MM-dd", "n": "-1"}
	for tmpl, want := range map[string]string{
		"$[yyyyMMdd-${days}]":              "20260324",
		"$[${fmt}]":                        "2026-03-31",
		"$[add_months(${fmt},${n})]":       "2026-02-28",
		"$[yyyyMMdd-${ days }*2] ${days}d": "20260317 7d",
	} {
		got, err := Expand(tmpl, vars, base)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tmpl, got, err, want)
		}
	}
	// The expression is checked once the parameter has a value.
	if err := Check("$[yyyyMMdd-${days}]"); err != nil {
		t.Errorf("Check: %v", err)
	}
	_, err := Expand("x $[yyyyMMdd-${days}]", map[string]string{"days": "1/0"}, base)
	wantError(t, "bad value", err, 2, "division by zero")
	_, err = Expand("x $[yyyyMMdd-${days}]", nil, base)
	wantError(t, "unknown inside", err, 13, `unknown parameter "days"`)
}

// wantError fails t unless err is an *Error at offset with a reason that
// has the text want.
func wantError(t *testing.T, what string, err error, offset int, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: error %v (%T); want an *Error", what, err, err)
		return
	}
	if e.Offset != offset || !strings.Contains(e.Reason, want) {
		t.Errorf("%s: error at %d, %q; want at %d, with %q", what, e.Offset, e.Reason, offset, want)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		tmpl   string
		offset int
		reason string
		syntax bool // Check reports it too
	}{
		// References.
		{"${nope}", 0, `unknown parameter "nope"`, false},
		{"$[yyyyMMdd] ${nope}", 12, `unknown parameter "nope"`, false},
		{"a ${dt", 2, `${ is not closed by '}'`, true},
		{"${dt} $[yyyyMMdd", 6, `$[ is not closed by ']'`, true},
		{"${dt} $[yyyyMMdd ${dt}", 6, `$[ is not closed`, true},
		{"${dt} ${", 6, "not closed", true},
		{"$[", 0, "not closed", true},
		{"${}", 0, "empty parameter name", true},
		{"ok ${  }", 3, "empty parameter name", true},
		{"ok ${a b}", 3, `parameter name "a b" has ' '`, true},
		{"${a${b}}", 0, `has '$'`, true},
		{"${a/b}", 0, `has '/'`, true},
		{"${dt} $[]", 6, "empty time expression", true},
		{"$[  ]", 0, "empty time expression", true},
		{"$$ ${ x", 3, "not closed", true},

		// Functions.
		{"$[bogus_fn(yyyy)]", 0, `unknown time function "bogus_fn"`, true},
		{"$[add_month(yyyyMMdd,1)]", 0, `unknown time function "add_month"`, true},
		{"$[timestmp(yyyyMMdd)]", 0, `unknown time function "timestmp"`, true},
		{"$[add_months(yyyyMMdd)]", 0, "add_months takes (format, months), not 1 argument", true},
		{"$[add_months(yyyyMMdd,1,2)]", 0, "not 3 argument", true},
		{"$[this_day(yyyyMMdd,1)]", 0, "this_day takes (format)", true},
		{"$[month_begin(yyyyMMdd)]", 0, "month_begin takes (format, days)", true},
		{"$[month_first_day(yyyyMMdd,1,2)]", 0, "month_first_day takes (format[, months])", true},
		{"$[add_months(yyyyMMdd,x)]", 0, `number "x"`, true},
		{"$[add_months(yyyyMMdd,)]", 0, "empty number", true},
		{"$[add_months(yyyyMMdd,1-)]", 0, "want a number at the end", true},
		{"$[add_months(yyyyMMdd,(1)]", 0, "missing )", true},
		{"$[add_months(yyyyMMdd,(1+1)]", 0, "missing )", true},
		{"$[add_months(yyyyMMdd,1/0)]", 0, "division by zero", true},
		{"$[add_months(yyyyMMdd,1000000)]", 0, "more than 100000", true},
		{"$[add_months(yyyyMMdd,99999999999)]", 0, "out of range", true},
		{"$[add_months(,1)]", 0, "empty format", true},
		{"$[add_months(yyyyMMdd,1]", 0, "add_months( is not closed by a )", true},
		{"$[add_months(yyyyMMdd,1)-1]", 0, "not closed by a )", true},
		{"$[year_week(yyyy-MM-dd,8)]", 0, "want 1 (Monday) to 7 (Sunday)", true},
		{"$[year_week(yyyy-MM-dd,0)]", 0, "want 1 (Monday) to 7 (Sunday)", true},
		{"$[year_week()]", 0, "empty format", true},
		{"$[year_week(a,1,2)]", 0, "year_week takes", true},
		{"$[timestamp(year_week(yyyy))]", 0, "year_week does not compute a time", true},
		{"$[timestamp(yyyyMMddQ)]", 0, "'Q' is not supported", true},

		// Formats and offsets.
		{"$[YYYYMMdd]", 0, "'Y' is the week-based year", true},
		{"$[yyyyMMdd ww]", 0, "'w' is not supported", true},
		{"$[yyyy-MM-dd 'x]", 0, "unterminated quote", true},
		{"$[XXXX]", 0, "at most three X", true},
		{"$[-1]", 0, "empty format", true},
		{"$[yyyyMMdd-1/0]", 0, "division by zero", true},
		{"$[yyyyMMdd-1*]", 0, `offset "-1*": want a number after '*'`, true},
		{"$[yyyyMMdd-1**2]", 0, "want a number after '*'", true},
		{"$[yyyyMMdd-1 2]", 0, `want '*' or '/' at "2"`, true},
		{"$[add_months(yyyyMMdd,1 2)]", 0, `unexpected "2"`, true},
		{"$[yyyyMMdd+1000000]", 0, "out of range", true},
		{"$[yyyyMMdd+100001]", 0, "more than 100000 days", true},
		{"ok $[yyyyMMdd] $[yyyyMMdd-1/0]", 15, "division by zero", true},
	} {
		_, err := Expand(c.tmpl, map[string]string{"dt": "x", "b": "y"}, base)
		wantError(t, "Expand("+c.tmpl+")", err, c.offset, c.reason)
		err = Check(c.tmpl)
		if !c.syntax {
			if err != nil {
				t.Errorf("Check(%q): %v; want nil", c.tmpl, err)
			}
			continue
		}
		wantError(t, "Check("+c.tmpl+")", err, c.offset, c.reason)
	}
}

func TestErrorIsTheFirst(t *testing.T) {
	_, err := Expand("${a} ${b} $[", nil, base)
	wantError(t, "Expand", err, 0, `unknown parameter "a"`)
	err = Check("${a} ${} $[")
	wantError(t, "Check", err, 5, "empty parameter name")
}

func TestErrorText(t *testing.T) {
	_, err := Expand("/data/${dtt}", nil, base)
	if got, want := err.Error(), `param: offset 6: unknown parameter "dtt"`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if _, ok := err.(*Error); !ok {
		t.Errorf("Expand's error is a %T; want an *Error, unwrapped", err)
	}
	if err := Check("fine ${x} $[yyyyMMdd-1]"); err != nil {
		t.Errorf("Check = %v (%T); want a nil error", err, err)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		want []string
	}{
		{"", nil},
		{"no parameters $[yyyyMMdd]", nil},
		{"${a} ${b} ${a} $${c} ${ d } ${bad name} ${} $[yyyy-${n}] ${system.biz.date}", []string{"a", "b", "d", "n", "system.biz.date"}},
		{"${b}${a}${b}", []string{"b", "a"}},
		{"${a} ${b", []string{"a"}},
		{"$${a}", nil},
	} {
		if got := Names(c.tmpl); !slices.Equal(got, c.want) {
			t.Errorf("Names(%q) = %q; want %q", c.tmpl, got, c.want)
		}
	}
}

func TestBuiltins(t *testing.T) {
	want := map[string]string{
		"system.biz.date":    "20260330",
		"system.biz.curdate": "20260331",
		"system.datetime":    "20260331140509",
	}
	if got := Builtins(base); !maps.Equal(got, want) {
		t.Errorf("Builtins = %v; want %v", got, want)
	}
	// In base's location: 2026-03-01 00:30 CST is still February 28 in UTC.
	late := time.Date(2026, 3, 1, 0, 30, 0, 0, cst)
	want = map[string]string{
		"system.biz.date":    "20260228",
		"system.biz.curdate": "20260301",
		"system.datetime":    "20260301003000",
	}
	if got := Builtins(late); !maps.Equal(got, want) {
		t.Errorf("Builtins(%s) = %v; want %v", late, got, want)
	}
}

func TestResolve(t *testing.T) {
	outer := Builtins(base)
	outer["region"] = "eu"
	outer["dt"] = "outer"
	before := maps.Clone(outer)
	defs := map[string]string{
		"dt":     "$[yyyyMMdd-1]",
		"path":   "/data/${dt}/${region}",
		"full":   "${path}/part-${system.biz.curdate}",
		"last":   "${full}.done",
		"days":   "7",
		"since":  "$[yyyyMMdd-${days}]",
		"plain":  "no references",
		"escape": "$${dt}",
		"quoted": "${ref}",
		"ref":    "${path}",
	}
	got, err := Resolve(defs, outer, base)
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(before)
	maps.Copy(want, map[string]string{
		"dt":     "20260330",
		"path":   "/data/20260330/eu",
		"full":   "/data/20260330/eu/part-20260331",
		"last":   "/data/20260330/eu/part-20260331.done",
		"days":   "7",
		"since":  "20260324",
		"plain":  "no references",
		"escape": "${dt}",
		"quoted": "/data/20260330/eu",
		"ref":    "/data/20260330/eu",
	})
	if !maps.Equal(got, want) {
		t.Errorf("Resolve =\n%v\nwant\n%v", got, want)
	}
	if !maps.Equal(outer, before) {
		t.Errorf("Resolve changed outer: %v", outer)
	}

	if got, err := Resolve(nil, nil, base); err != nil || len(got) != 0 {
		t.Errorf("Resolve(nil, nil) = %v, %v", got, err)
	}
}

func TestResolveErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		defs   map[string]string
		text   string // in the error's text
		offset int
		reason string
	}{
		{"cycle", map[string]string{"a": "${b}", "b": "x/${c}", "c": "${a}", "d": "ok"},
			`parameter a: "${b}": param: offset 0: parameters refer to each other in a cycle: a -> b -> c -> a`, 0, "a -> b -> c -> a"},
		{"cycle reached from outside it", map[string]string{"a": "${b}", "b": "${c}", "c": "x ${b}"},
			`parameter b: "${c}"`, 0, "cycle: b -> c -> b"},
		{"a parameter refers to itself", map[string]string{"a": "x${a}"},
			`parameter a: "x${a}"`, 1, "cycle: a -> a"},
		{"a cycle in a time expression", map[string]string{"a": "$[yyyyMMdd-${b}]", "b": "${a}"},
			`parameter a`, 11, "cycle: a -> b -> a"},
		{"unknown", map[string]string{"a": "1", "b": "${a}/${nope}"},
			`parameter b: "${a}/${nope}": param: offset 5: unknown parameter "nope"`, 5, `unknown parameter "nope"`},
		{"bad time", map[string]string{"a": "$[yyyyMMdd-1/0]"},
			`parameter a`, 0, "division by zero"},
	} {
		got, err := Resolve(c.defs, map[string]string{"x": "1"}, base)
		if err == nil {
			t.Errorf("%s: Resolve = %v; want an error", c.name, got)
			continue
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: error %q; want it to have %q", c.name, err, c.text)
		}
		wantError(t, c.name, err, c.offset, c.reason)
	}
}

// FuzzCheck checks that nothing panics, and that a template Check accepts
// expands once its parameters are defined, unless a time expression
// refers to one (Check cannot know what it will be).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"${a} $[yyyyMMdd-1] $${b}", "$[add_months(yyyy-MM-dd,-(1+1))]", "$[year_week(yyyyMMdd,7)]",
		"$[timestamp(week_last_day(yyyyMMddHHmmss,-1))]", "$['q''q' yyyy-MM-01]", "${", "$[x(", "$$$[",
		"$[month_end(yyyyMMdd, 1)]", "$[HHmmss-1/24/60]", "$[yyyyMMdd-${n}]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vars := map[string]string{}
		for _, n := range Names(s) {
			vars[n] = "1"
		}
		got, err := Expand(s, vars, base)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset >= len(s) || s[e.Offset] != '$' {
				t.Fatalf("Expand(%q): error %v at a byte that is not a '$'", s, err)
			}
		}
		if Check(s) == nil && err != nil {
			nested := false
			for seg := range segments(s, 0) {
				nested = nested || seg.kind == segTime && strings.Contains(seg.text, "${")
			}
			if !nested {
				t.Fatalf("Check(%q) = nil, but Expand: %v", s, err)
			}
		}
		_ = got
	})
}
