package param_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strandhq/strand/dag/param"
)

func ExampleExpand() {
	fire := time.Date(2026, 3, 31, 2, 0, 0, 0, time.FixedZone("CST", 8*3600))
	vars := param.Builtins(fire)
	vars["table"] = "orders"

	s, err := param.Expand(
		"insert overwrite table ${table} partition (dt='${system.biz.date}')\n"+
			"select * from ${table}_log where day between '$[add_months(yyyy-MM-dd,-1)]' and '$[yyyy-MM-dd-1]'\n"+
			"-- hour $[HH-1/24], week $[year_week(yyyy-MM-dd)], month $[month_first_day(yyyyMMdd,-1)]-$[month_last_day(yyyyMMdd,-1)], $${not} a parameter",
		vars, fire)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)

	_, err = param.Expand("/data/${dtt}", vars, fire)
	var perr *param.Error
	if errors.As(err, &perr) {
		fmt.Println(perr.Offset, perr.Reason)
	}
	// Output:
	// insert overwrite table orders partition (dt='20260330')
	// select * from orders_log where day between '2026-02-28' and '2026-03-30'
	// -- hour 01, week 2026-14, month 20260201-20260228, ${not} a parameter
	// 6 unknown parameter "dtt"
}

func ExampleResolve() {
	fire := time.Date(2026, 3, 31, 2, 0, 0, 0, time.FixedZone("CST", 8*3600))
	outer := param.Builtins(fire)
	outer["region"] = "eu"

	globals := map[string]string{
		"path": "/data/${region}/${dt}",
		"dt":   "$[yyyyMMdd-1]",
		"done": "${path}/_SUCCESS",
	}
	vars, err := param.Resolve(globals, outer, fire)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		fmt.Printf("%s=%s\n", name, vars[name])
	}

	_, err = param.Resolve(map[string]string{"a": "${b}", "b": "${a}"}, nil, fire)
	fmt.Println(err)
	// Output:
	// done=/data/eu/20260330/_SUCCESS
	// dt=20260330
	// path=/data/eu/20260330
	// region=eu
	// system.biz.curdate=20260331
	// system.biz.date=20260330
	// system.datetime=20260331020000
	// parameter a: "${b}": param: offset 0: parameters refer to each other in a cycle: a -> b -> a
}

func ExampleCheck() {
	for _, s := range []string{
		"${dt} $[yyyyMMdd-1]",
		"ok ${dt",
		"$[add_month(yyyyMMdd,1)]",
	} {
		fmt.Println(param.Check(s))
	}
	// Output:
	// <nil>
	// param: offset 3: ${ is not closed by '}'
	// param: offset 0: time expression "add_month(yyyyMMdd,1)": unknown time function "add_month"
}
