package bench

// The visibility benchmark: a store holding many finished runs, and how
// fast it answers what the CLI and the API ask of it (first pages, the page
// after a token, counts) under each kind of filter, and what the console's
// runs page asks of a server over it (runspage.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/strandhq/strand/store"
)

// VisibilityConfig is one visibility measurement.
type VisibilityConfig struct {
	// Store holds (or is loaded with) the records.
	Store store.Store
	// Rows is the number of records of the data set.
	Rows int
	// Namespace holds the data set; "visbench-<Rows>" when empty. It is
	// created on first use and records the data set's size and time span,
	// so a later run on the same store measures the records already there
	// (or completes an interrupted load) instead of loading them again.
	Namespace string
	// PageSizes are the first-page sizes measured; the page after a token
	// is measured at the first of them. {100} when empty.
	PageSizes []int
	// Repeat is how many times each query is measured, after one
	// unmeasured call; 5 when zero.
	Repeat int
	// Batch is the records per UpsertVisibility call; 1000 when zero.
	Batch int
	// Loaders is how many batches are written at once; 4 when zero.
	Loaders int
	// Span is how far the start times spread, ending about when the data
	// set is created; VisibilitySpan when zero. A short span packs the
	// runs into a burst.
	Span time.Duration
	// Progress receives a progress bar while loading; nil for none.
	Progress io.Writer
}

// VisibilitySpan is how far the data set's start times spread by default.
const VisibilitySpan = 30 * 24 * time.Hour

// Namespace data keys that identify a data set (a data set without a span
// has the default).
const (
	visRowsKey   = "bench.visibility.rows"
	visOriginKey = "bench.visibility.origin"
	visSpanKey   = "bench.visibility.span"
)

// VisibilityReport is what a visibility measurement found.
type VisibilityReport struct {
	Namespace string
	// Rows is the number of records of the data set; Loaded of them were
	// written by this run, in LoadTime.
	Rows     int
	Loaded   int
	LoadTime time.Duration
	// Results holds a line per query and filter, in the order measured.
	Results []QueryResult
}

// LoadRate is the records written per second by this run.
func (r VisibilityReport) LoadRate() float64 {
	if r.Loaded == 0 || r.LoadTime <= 0 {
		return 0
	}
	return float64(r.Loaded) / r.LoadTime.Seconds()
}

// QueryResult is one query measured under one filter.
type QueryResult struct {
	// Query is "list N" (a first page of N), "next N" (the page after the
	// first page's token) or "count".
	Query string
	// Filter names the filter.
	Filter string
	// Rows is what the query returned: the page's records or the count.
	Rows int64
	// First is the unmeasured first call; Median and Max are over the
	// measured calls, whose durations are Times.
	First       time.Duration
	Median, Max time.Duration
	Times       []time.Duration
}

// visDataset generates the records of a data set: record i is a function
// of i, rows and origin only, so any part of it can be written again.
type visDataset struct {
	rows   int
	origin time.Time // start of the span; the newest runs start near origin+span
	span   time.Duration
}

// visTypes are the data set's workflow types; type k is given to about
// 1/(k+1) as many runs as type 0 (Zipf).
var visTypes = []string{"order", "refund", "shipment", "invoice", "payment", "signup", "report", "sync", "email", "backup",
	"import", "export", "billing", "audit", "onboarding", "reminder", "cleanup", "migration", "subscription", "fraud-check"}

var visTypeCumulative = func() []float64 {
	w := make([]float64, len(visTypes))
	sum := 0.0
	for k := range w {
		sum += 1 / float64(k+1)
		w[k] = sum
	}
	for k := range w {
		w[k] /= sum
	}
	return w
}()

// visRegions are the region attribute's values, with their share of runs.
var visRegions = []struct {
	name  string
	share float64
}{{"eu", 0.40}, {"us", 0.30}, {"apac", 0.15}, {"latam", 0.10}, {"africa", 0.05}}

// visTenants is how many values the tenant attribute takes, evenly.
const visTenants = 1000

// mix is splitmix64: a well-spread 64-bit hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// unit returns a number in [0, 1) drawn from record i and a salt.
func unit(i int, salt uint64) float64 {
	return float64(mix(uint64(i)*0x100+salt)>>11) / (1 << 53)
}

func (d visDataset) startTime(i int) time.Time {
	step := float64(d.span) / float64(d.rows)
	jitter := (unit(i, 1) - 0.5) * float64(min(30*time.Second, d.span/1000))
	off := time.Duration(float64(i)*step + jitter)
	off = min(max(off, 0), d.span-time.Millisecond)
	return store.Time(d.origin.Add(off))
}

func (d visDataset) typeOf(i int) string {
	if i%10 == 9 { // a continued run of the previous record's workflow
		i--
	}
	u := unit(i, 2)
	k, _ := slices.BinarySearch(visTypeCumulative, u)
	return visTypes[min(k, len(visTypes)-1)]
}

func (d visDataset) workflowID(i int) string {
	if i%10 == 9 {
		i--
	}
	return fmt.Sprintf("%s-%012x", d.typeOf(i), mix(uint64(i))>>16)
}

func (d visDataset) runID(i int) string {
	a, b := mix(uint64(i)^0x5bd1e995), mix(uint64(i)^0x27d4eb2f)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, 0x8000|b>>48&0x3fff, b&0xffffffffffff)
}

// status: runs started in the last 1/120 of the span (six hours of 30
// days) are often still running, older ones rarely; closed runs mostly
// completed.
func (d visDataset) status(i int, start time.Time) store.RunStatus {
	u := unit(i, 3)
	running := 0.005
	if d.origin.Add(d.span).Sub(start) < d.span/120 {
		running = 0.4
	}
	if u < running {
		return store.StatusRunning
	}
	u = (u - running) / (1 - running)
	for _, s := range []struct {
		st    store.RunStatus
		upper float64
	}{{store.StatusCompleted, 0.90}, {store.StatusFailed, 0.94}, {store.StatusCanceled, 0.96}, {store.StatusContinuedAsNew, 0.98},
		{store.StatusTerminated, 0.99}} {
		if u < s.upper {
			return s.st
		}
	}
	return store.StatusTimedOut
}

func (d visDataset) businessKey(i int) string {
	if unit(i, 4) < 0.2 {
		return ""
	}
	customers := uint64(d.rows/50 + 1)
	return fmt.Sprintf("cust-%07d", mix(uint64(i)^0x1234567)%customers)
}

func (d visDataset) region(i int) string {
	u, acc := unit(i, 5), 0.0
	for _, r := range visRegions {
		acc += r.share
		if u < acc {
			return r.name
		}
	}
	return visRegions[len(visRegions)-1].name
}

func (d visDataset) tenant(i int) string {
	return fmt.Sprintf("t-%04d", mix(uint64(i)^0x9876543)%visTenants)
}

func (d visDataset) record(ns string, i int) store.VisibilityRecord {
	start := d.startTime(i)
	r := store.VisibilityRecord{
		Namespace: ns, WorkflowID: d.workflowID(i), RunID: d.runID(i), Type: d.typeOf(i),
		Status: d.status(i, start), StartTime: start, BusinessKey: d.businessKey(i),
		Attributes: map[string]string{"region": d.region(i), "tenant": d.tenant(i)},
		Version:    1,
	}
	if r.Status != store.StatusRunning {
		r.CloseTime = store.Time(start.Add(time.Duration(1+unit(i, 6)*3600) * time.Second))
		r.Version = 2
	}
	return r
}

// visFilter is a named filter the benchmark measures.
type visFilter struct {
	name string
	f    store.RunFilter
	// rare says the filter may match nothing in a small data set.
	rare bool
}

// filters returns the measured filters, with values taken from the data
// set (the middle record's business key, workflow id and tenant) so each
// matches runs.
func (d visDataset) filters(ns string) []visFilter {
	mid := d.rows / 2
	bk := ""
	for i := mid; bk == "" && i < d.rows; i++ {
		bk = d.businessKey(i)
	}
	wid := d.workflowID(mid)
	end := d.origin.Add(d.span)
	// The last day and a week before it, of 30 days; the same parts of
	// another span.
	day := store.RunFilter{Namespace: ns, StartedAfter: end.Add(-d.span / 30), StartedBefore: end}
	week := store.RunFilter{Namespace: ns, StartedAfter: end.Add(-d.span * 14 / 30), StartedBefore: end.Add(-d.span * 7 / 30)}
	dayName, weekName := "last day", "a week, 7-14 days ago"
	if d.span != VisibilitySpan {
		dayName, weekName = "last "+(d.span/30).String(), fmt.Sprintf("%s to %s ago", d.span*7/30, d.span*14/30)
	}
	with := func(f store.RunFilter, set func(*store.RunFilter)) store.RunFilter {
		set(&f)
		return f
	}
	ns0 := store.RunFilter{Namespace: ns}
	common, rare := visTypes[0], visTypes[len(visTypes)-1]
	fs := []visFilter{
		{name: "none", f: ns0},
		{name: "status=completed", f: with(ns0, func(f *store.RunFilter) { f.Statuses = []store.RunStatus{store.StatusCompleted} })},
		{name: "status=failed", f: with(ns0, func(f *store.RunFilter) { f.Statuses = []store.RunStatus{store.StatusFailed} })},
		{name: "status=running", f: with(ns0, func(f *store.RunFilter) { f.Statuses = []store.RunStatus{store.StatusRunning} })},
		{name: "status=failed|terminated|timed_out", f: with(ns0, func(f *store.RunFilter) {
			f.Statuses = []store.RunStatus{store.StatusFailed, store.StatusTerminated, store.StatusTimedOut}
		})},
		{name: "type=" + common, f: with(ns0, func(f *store.RunFilter) { f.Type = common })},
		{name: "type=" + rare, f: with(ns0, func(f *store.RunFilter) { f.Type = rare })},
		{name: "type=" + common + " status=failed", f: with(ns0, func(f *store.RunFilter) {
			f.Type, f.Statuses = common, []store.RunStatus{store.StatusFailed}
		})},
		{name: "type=" + rare + " status=timed_out", f: with(ns0, func(f *store.RunFilter) {
			f.Type, f.Statuses = rare, []store.RunStatus{store.StatusTimedOut}
		})},
		{name: dayName, f: day},
		{name: weekName, f: week},
		{name: dayName + " status=failed", f: with(day, func(f *store.RunFilter) { f.Statuses = []store.RunStatus{store.StatusFailed} })},
		{name: weekName + " type=" + common, f: with(week, func(f *store.RunFilter) { f.Type = common })},
		{name: "business key", f: with(ns0, func(f *store.RunFilter) { f.BusinessKey = bk })},
		{name: "attribute region=eu", f: with(ns0, func(f *store.RunFilter) { f.Attributes = map[string]string{"region": "eu"} })},
		{name: "attribute tenant", f: with(ns0, func(f *store.RunFilter) { f.Attributes = map[string]string{"tenant": d.tenant(mid)} })},
		{name: "workflow id", f: with(ns0, func(f *store.RunFilter) { f.WorkflowID = d.workflowID(mid) })},
		// Prefixes, as the console's runs page filters: a type's runs
		// (ids are "TYPE-" and 12 hex digits), 1 in 4,096 of a type's,
		// none; 100 customers' business keys, and most runs'.
		{name: "workflow id prefix " + common + "-", f: with(ns0, func(f *store.RunFilter) { f.WorkflowIDPrefix = common + "-" })},
		{name: "workflow id prefix " + common + "- status=failed", f: with(ns0, func(f *store.RunFilter) {
			f.WorkflowIDPrefix, f.Statuses = common+"-", []store.RunStatus{store.StatusFailed}
		})},
		{name: "workflow id prefix, 1 in 4,096 of a type", f: with(ns0, func(f *store.RunFilter) { f.WorkflowIDPrefix = wid[:len(wid)-9] })},
		{name: "workflow id prefix, no run", f: with(ns0, func(f *store.RunFilter) { f.WorkflowIDPrefix = "zzz" })},
		{name: "business key prefix, 100 customers", f: with(ns0, func(f *store.RunFilter) { f.BusinessKeyPrefix = bk[:len(bk)-2] })},
		{name: "business key prefix cust-", f: with(ns0, func(f *store.RunFilter) { f.BusinessKeyPrefix = "cust-" })},
	}
	for i := range fs {
		// A rare type with a rare status, or a prefix of no run.
		fs[i].rare = fs[i].f.Type == rare && len(fs[i].f.Statuses) > 0 || fs[i].f.WorkflowIDPrefix == "zzz"
	}
	return fs
}

// RunVisibility loads the data set unless the store holds it, then measures
// every query under every filter.
func RunVisibility(ctx context.Context, cfg VisibilityConfig) (VisibilityReport, error) {
	if cfg.Store == nil {
		return VisibilityReport{}, fmt.Errorf("%w: visibility benchmark: no store", store.ErrInvalidArgument)
	}
	if cfg.Rows <= 0 {
		return VisibilityReport{}, fmt.Errorf("%w: visibility benchmark: %d rows; want a positive number", store.ErrInvalidArgument, cfg.Rows)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "visbench-" + strconv.Itoa(cfg.Rows)
	}
	if len(cfg.PageSizes) == 0 {
		cfg.PageSizes = []int{100}
	}
	for _, n := range cfg.PageSizes {
		if n <= 0 || n > store.MaxPageSize {
			return VisibilityReport{}, fmt.Errorf("%w: visibility benchmark: page size %d; want 1 to %d", store.ErrInvalidArgument, n, store.MaxPageSize)
		}
	}
	if cfg.Repeat <= 0 {
		cfg.Repeat = 5
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Loaders <= 0 {
		cfg.Loaders = 4
	}
	if cfg.Span < 0 || cfg.Span > 0 && cfg.Span < time.Minute {
		return VisibilityReport{}, fmt.Errorf("%w: visibility benchmark: span %s; want at least a minute", store.ErrInvalidArgument, cfg.Span)
	}
	if cfg.Span == 0 {
		cfg.Span = VisibilitySpan
	}
	d, err := dataset(ctx, cfg)
	if err != nil {
		return VisibilityReport{}, err
	}
	rep := VisibilityReport{Namespace: cfg.Namespace, Rows: cfg.Rows}
	if rep.Loaded, rep.LoadTime, err = load(ctx, cfg, d); err != nil {
		return rep, err
	}
	for _, vf := range d.filters(cfg.Namespace) {
		res, err := measureFilter(ctx, cfg, vf)
		if err != nil {
			return rep, fmt.Errorf("filter %s: %w", vf.name, err)
		}
		rep.Results = append(rep.Results, res...)
	}
	res, err := measureRunsPage(ctx, cfg)
	if err != nil {
		return rep, fmt.Errorf("runs page: %w", err)
	}
	rep.Results = append(rep.Results, res)
	return rep, nil
}

// dataset returns the data set of the namespace, creating the namespace
// if it does not exist.
func dataset(ctx context.Context, cfg VisibilityConfig) (visDataset, error) {
	ns, err := cfg.Store.GetNamespace(ctx, cfg.Namespace)
	if errors.Is(err, store.ErrNamespaceNotFound) {
		origin := store.Time(time.Now().Add(-cfg.Span).Truncate(time.Minute))
		ns, err = cfg.Store.CreateNamespace(ctx, store.Namespace{Name: cfg.Namespace,
			Description: "records of strand bench visibility",
			Data: map[string]string{visRowsKey: strconv.Itoa(cfg.Rows), visOriginKey: strconv.FormatInt(store.UnixMilli(origin), 10),
				visSpanKey: strconv.FormatInt(int64(cfg.Span/time.Millisecond), 10)}})
		if errors.Is(err, store.ErrNamespaceExists) { // another run created it meanwhile
			ns, err = cfg.Store.GetNamespace(ctx, cfg.Namespace)
		}
	}
	if err != nil {
		return visDataset{}, fmt.Errorf("visibility benchmark: namespace %s: %w", cfg.Namespace, err)
	}
	rows, err1 := strconv.Atoi(ns.Data[visRowsKey])
	origin, err2 := strconv.ParseInt(ns.Data[visOriginKey], 10, 64)
	if err1 != nil || err2 != nil {
		return visDataset{}, fmt.Errorf("%w: namespace %s exists and holds no visibility benchmark data set; choose another namespace",
			store.ErrInvalidArgument, cfg.Namespace)
	}
	span := VisibilitySpan
	if v, ok := ns.Data[visSpanKey]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return visDataset{}, fmt.Errorf("%w: namespace %s: span %q", store.ErrInvalidArgument, cfg.Namespace, v)
		}
		span = time.Duration(ms) * time.Millisecond
	}
	if rows != cfg.Rows || span != cfg.Span {
		return visDataset{}, fmt.Errorf("%w: namespace %s holds a data set of %d rows over %s, not %d over %s; choose another namespace",
			store.ErrInvalidArgument, cfg.Namespace, rows, span, cfg.Rows, cfg.Span)
	}
	return visDataset{rows: rows, origin: store.FromUnixMilli(origin), span: span}, nil
}

// load writes the records the namespace does not hold yet, Loaders
// batches at a time in record order. Records are written in order, and a
// batch is written again harmlessly (the same version replaces itself), so
// a load that was interrupted is completed from a little before the count
// it reached.
func load(ctx context.Context, cfg VisibilityConfig, d visDataset) (int, time.Duration, error) {
	have, err := cfg.Store.CountRuns(ctx, store.RunFilter{Namespace: cfg.Namespace})
	if err != nil {
		return 0, 0, fmt.Errorf("visibility benchmark: count loaded records: %w", err)
	}
	if have >= int64(d.rows) {
		return 0, 0, nil
	}
	first := max(0, (int(have)/cfg.Batch-cfg.Loaders)*cfg.Batch)
	var bar *progressbar.ProgressBar
	if cfg.Progress != nil {
		bar = progressbar.NewOptions(d.rows-first, progressbar.OptionSetWriter(cfg.Progress), progressbar.OptionSetDescription("load"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(500*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	next.Store(int64(first))
	var firstErr error
	var once sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.Loaders {
		wg.Go(func() {
			recs := make([]store.VisibilityRecord, 0, cfg.Batch)
			for ctx.Err() == nil {
				from := int(next.Add(int64(cfg.Batch))) - cfg.Batch
				if from >= d.rows {
					return
				}
				recs = recs[:0]
				for i := from; i < min(from+cfg.Batch, d.rows); i++ {
					recs = append(recs, d.record(cfg.Namespace, i))
				}
				if err := cfg.Store.UpsertVisibility(ctx, recs...); err != nil {
					once.Do(func() {
						firstErr = fmt.Errorf("visibility benchmark: load records %d to %d: %w", from, from+len(recs)-1, err)
					})
					cancel()
					return
				}
				if bar != nil {
					bar.Add(len(recs))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if bar != nil {
		bar.Finish()
	}
	if firstErr != nil {
		return 0, elapsed, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, elapsed, err
	}
	return d.rows - first, elapsed, nil
}

// measure calls q once unmeasured and cfg.Repeat times measured.
func measure(ctx context.Context, cfg VisibilityConfig, query, filter string, q func() (int64, error)) (QueryResult, error) {
	res := QueryResult{Query: query, Filter: filter}
	for i := range cfg.Repeat + 1 {
		t0 := time.Now()
		n, err := q()
		d := time.Since(t0)
		if err != nil {
			return res, fmt.Errorf("%s: %w", query, err)
		}
		if i == 0 {
			res.First, res.Rows = d, n
			continue
		}
		if n != res.Rows {
			return res, fmt.Errorf("%s: %d rows, then %d", query, res.Rows, n)
		}
		res.Times = append(res.Times, d)
	}
	sorted := slices.Sorted(slices.Values(res.Times))
	res.Median, res.Max = sorted[len(sorted)/2], sorted[len(sorted)-1]
	return res, nil
}

func measureFilter(ctx context.Context, cfg VisibilityConfig, vf visFilter) ([]QueryResult, error) {
	var out []QueryResult
	var token []byte
	for i, size := range cfg.PageSizes {
		res, err := measure(ctx, cfg, fmt.Sprintf("list %d", size), vf.name, func() (int64, error) {
			p, err := cfg.Store.ListRuns(ctx, store.ListRunsRequest{RunFilter: vf.f, PageSize: size})
			if i == 0 {
				token = p.NextPageToken
			}
			return int64(len(p.Runs)), err
		})
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	if token != nil {
		res, err := measure(ctx, cfg, fmt.Sprintf("next %d", cfg.PageSizes[0]), vf.name, func() (int64, error) {
			p, err := cfg.Store.ListRuns(ctx, store.ListRunsRequest{RunFilter: vf.f, PageSize: cfg.PageSizes[0], PageToken: token})
			return int64(len(p.Runs)), err
		})
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	res, err := measure(ctx, cfg, "count", vf.name, func() (int64, error) { return cfg.Store.CountRuns(ctx, vf.f) })
	if err != nil {
		return out, err
	}
	return append(out, res), nil
}

// PrintVisibility writes the report as a table.
func PrintVisibility(w io.Writer, backend string, rep VisibilityReport) {
	fmt.Fprintf(w, "%s: %d runs in namespace %s\n", backend, rep.Rows, rep.Namespace)
	if rep.Loaded > 0 {
		fmt.Fprintf(w, "loaded %d records in %s (%.0f records/s)\n", rep.Loaded, rep.LoadTime.Round(time.Millisecond), rep.LoadRate())
	} else {
		fmt.Fprintln(w, "the store held the records already; none loaded")
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	fmt.Fprintf(w, "%-42s %-9s %9s %9s %9s %9s\n", "filter", "query", "rows", "median ms", "max ms", "first ms")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-42s %-9s %9d %9s %9s %9s\n", r.Filter, r.Query, r.Rows, ms(r.Median), ms(r.Max), ms(r.First))
	}
}
