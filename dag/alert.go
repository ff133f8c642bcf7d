package dag

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/param"
	"github.com/strandhq/strand/step"
	"github.com/strandhq/strand/store"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// AlertGroup is who an alert group's alerts go to and how: an email to
// its users (Strand users, at their email address) and addresses, with
// copies to CC, and a webhook called with the Alert as its JSON body.
// It has at least one channel.
type AlertGroup struct {
	Description string `json:"description,omitempty" max:"1000" text:"true"`
	// Users are Strand users (strand user create --email): the email goes
	// to each one's address.
	Users []string `json:"users,omitempty" max:"100" maxvalue:"128"`
	// Emails are addresses the email goes to besides the users'.
	Emails []string `json:"emails,omitempty" max:"100" maxvalue:"256"`
	// CC are addresses copied on the email.
	CC []string `json:"cc,omitempty" max:"100" maxvalue:"256"`
	// URL is the webhook's (http:// or https://).
	URL string `json:"url,omitempty" max:"2000"`
	// Headers are sent with each webhook call (an Authorization, say).
	Headers map[string]string `json:"headers,omitempty" max:"32" maxkey:"128" maxvalue:"4096"`
}

// Channels of an alert group.
const (
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
)

// Channels names the group's channels: email, webhook or both.
func (g AlertGroup) Channels() []string {
	var out []string
	if len(g.Users)+len(g.Emails) > 0 {
		out = append(out, ChannelEmail)
	}
	if g.URL != "" {
		out = append(out, ChannelWebhook)
	}
	return out
}

// storedAlertGroup is a group's stored body: a deleted group is a version
// marked deleted (definitions keep their versions).
type storedAlertGroup struct {
	AlertGroup
	Deleted bool `json:"deleted,omitempty"`
}

// AlertGroupInfo is an alert group with its name, its channels and who
// changed it last.
type AlertGroupInfo struct {
	Name string `json:"name"`
	AlertGroup
	Channels   []string  `json:"channels"`
	ModifiedBy string    `json:"modified_by,omitempty"`
	ModifiedAt time.Time `json:"modified_at,omitzero"`
}

// UserDirectory finds Strand users' email addresses: the users of access
// control (server.UserDirectory). UserEmail fails with a typed error
// (api.InvalidArgument) for a user that does not exist, has no email
// address or is disabled.
type UserDirectory interface {
	UserEmail(ctx context.Context, name string) (string, error)
}

// checkAddress says whether s is a bare email address (a@example.com).
func checkAddress(field, s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return api.InvalidArgument(field, "%q is not an email address (want name@example.com)", s)
	}
	return nil
}

// clean trims and sorts a list and drops empty and repeated entries.
func clean(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// check checks a group's form (not whether its users exist) and puts its
// lists in order.
func (g *AlertGroup) check() error {
	g.Users, g.Emails, g.CC = clean(g.Users), clean(g.Emails), clean(g.CC)
	g.URL = strings.TrimSpace(g.URL)
	for _, u := range g.Users {
		if u == "" || strings.ContainsAny(u, " \t\r\n,\x00") || len(u) > 128 {
			return api.InvalidArgument("users", "%q is not a user name", u)
		}
	}
	for _, list := range []struct {
		field string
		addrs []string
	}{{"emails", g.Emails}, {"cc", g.CC}} {
		for _, a := range list.addrs {
			if err := checkAddress(list.field, a); err != nil {
				return err
			}
		}
	}
	if g.URL != "" {
		u, err := url.Parse(g.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return api.InvalidArgument("url", "want an http:// or https:// URL, got %q", g.URL)
		}
	}
	for k, v := range g.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n\x00") {
			return api.InvalidArgument("headers", "%q is not a header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return api.InvalidArgument("headers", "the value of %s has a line break", k)
		}
	}
	if len(g.CC) > 0 && len(g.Users)+len(g.Emails) == 0 {
		return api.InvalidArgument("cc", "copies need a recipient: name a user (--user) or an address (--email)")
	}
	if len(g.Channels()) == 0 {
		return api.InvalidArgument("channels", "an alert group needs a channel: users or addresses to email (--user, --email), or a webhook (--webhook)")
	}
	return nil
}

// CheckAlertGroup checks a group before it is stored: its form, and with
// users (nil: not checked) that each of its users exists and has an email
// address.
func CheckAlertGroup(ctx context.Context, g *AlertGroup, users UserDirectory) error {
	if err := g.check(); err != nil {
		return err
	}
	if users == nil {
		return nil
	}
	for _, u := range g.Users {
		if _, err := users.UserEmail(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// SetAlertGroup stores an alert group (the whole group: what it does not
// name is no longer in it). Bad input stores nothing.
func (c *Catalog) SetAlertGroup(ctx context.Context, name string, g AlertGroup, by string) error {
	if !validName.MatchString(name) {
		return api.InvalidArgument("name", "%q is not an alert group name (letters, digits, '_', '.' and '-')", name)
	}
	if err := g.check(); err != nil {
		return err
	}
	body, _ := json.Marshal(storedAlertGroup{AlertGroup: g})
	if _, err := c.cl.PutDefinition(ctx, api.Definition{Type: alertPrefix + name, Body: body, ModifiedBy: by}); err != nil {
		return fmt.Errorf("dag: store alert group %s: %w", name, err)
	}
	return nil
}

// AlertGroup returns an alert group; one that does not exist (or was
// deleted) is api.ErrNotFound.
func (c *Catalog) AlertGroup(ctx context.Context, name string) (AlertGroup, error) {
	info, err := c.AlertGroupInfo(ctx, name)
	return info.AlertGroup, err
}

// AlertGroupInfo returns an alert group with its name and channels.
func (c *Catalog) AlertGroupInfo(ctx context.Context, name string) (AlertGroupInfo, error) {
	d, err := c.cl.GetDefinition(ctx, alertPrefix+name, 0)
	if err != nil {
		return AlertGroupInfo{}, fmt.Errorf("dag: alert group %s: %w", name, err)
	}
	return alertGroupInfo(name, d)
}

func alertGroupInfo(name string, d api.Definition) (AlertGroupInfo, error) {
	var g storedAlertGroup
	if err := json.Unmarshal(d.Body, &g); err != nil {
		return AlertGroupInfo{}, fmt.Errorf("dag: alert group %s: %w", name, err)
	}
	if g.Deleted {
		return AlertGroupInfo{}, fmt.Errorf("dag: alert group %s: %w (deleted)", name, api.ErrNotFound)
	}
	return AlertGroupInfo{Name: name, AlertGroup: g.AlertGroup, Channels: g.Channels(), ModifiedBy: d.ModifiedBy, ModifiedAt: d.ModifiedAt}, nil
}

// AlertGroups lists the alert groups by name.
func (c *Catalog) AlertGroups(ctx context.Context) ([]AlertGroupInfo, error) {
	all, err := c.cl.ListDefinitions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("dag: list alert groups: %w", err)
	}
	latest := map[string]api.Definition{}
	for _, d := range all {
		if name, ok := strings.CutPrefix(d.Type, alertPrefix); ok && d.Version >= latest[name].Version {
			latest[name] = d
		}
	}
	out := []AlertGroupInfo{}
	for _, name := range slices.Sorted(maps.Keys(latest)) {
		info, err := alertGroupInfo(name, latest[name])
		if errors.Is(err, api.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// DeleteAlertGroup deletes an alert group: the DAGs that name it send no
// more alerts (each one not sent is logged). Setting it again brings it
// back.
func (c *Catalog) DeleteAlertGroup(ctx context.Context, name string, by string) error {
	if _, err := c.AlertGroup(ctx, name); err != nil {
		return err
	}
	body, _ := json.Marshal(storedAlertGroup{Deleted: true})
	if _, err := c.cl.PutDefinition(ctx, api.Definition{Type: alertPrefix + name, Body: body, ModifiedBy: by}); err != nil {
		return fmt.Errorf("dag: delete alert group %s: %w", name, err)
	}
	return nil
}

// Alert events.
const (
	EventInstanceSuccess = "instance_success"
	EventInstanceFailure = "instance_failure"
	EventTaskTimeout     = "task_timeout"
	// EventTest is what `strand alert-group test` sends.
	EventTest = "test"
)

// Alert is what an alert says: the webhook's JSON body, and what the
// email is written from.
type Alert struct {
	// Event is instance_success, instance_failure, task_timeout or test.
	Event     string `json:"event"`
	DAG       string `json:"dag"`
	Version   int32  `json:"version"`
	Instance  string `json:"instance"`
	Namespace string `json:"namespace,omitempty"`
	State     State  `json:"state,omitempty"`
	// Task is the task the alert is about: the timed-out task, or the
	// first failed task of a failed instance.
	Task string `json:"task,omitempty"`
	// Message is the error: the timed-out or failed task's, or the
	// instance's.
	Message string `json:"message,omitempty"`
	// Failed are the failed tasks of a failed instance, each with its
	// error.
	Failed []FailedTask `json:"failed,omitempty"`
	// BusinessDate is the instance's system.biz.date (yyyyMMdd) in
	// TimeZone, the zone of its ScheduleTime.
	BusinessDate string    `json:"business_date,omitempty"`
	ScheduleTime time.Time `json:"schedule_time,omitzero"`
	TimeZone     string    `json:"time_zone,omitempty"`
	Group        string    `json:"group"`
	Time         time.Time `json:"time"`
}

// FailedTask is a failed task and its error.
type FailedTask struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// alert sends the instance's end alert when its warning type asks.
func (ip *interpreter) alert(ctx workflow.Context) {
	ok := ip.inst.State == StateSuccess
	switch ip.warning.Type {
	case WarnAll:
	case WarnSuccess:
		if !ok {
			return
		}
	case WarnFailure:
		if ok {
			return
		}
	default:
		return
	}
	if ok {
		ip.sendAlert(ctx, Alert{Event: EventInstanceSuccess, State: ip.inst.State})
		return
	}
	a := Alert{Event: EventInstanceFailure, State: ip.inst.State, Message: ip.inst.Error}
	var msgs []string
	for _, t := range ip.inst.Tasks {
		if t.State == StateFailure {
			a.Failed = append(a.Failed, FailedTask{Name: t.Name, Error: cmp.Or(t.Error, "failed without an error message")})
			msgs = append(msgs, fmt.Sprintf("task %s: %s", t.Name, cmp.Or(t.Error, "failed without an error message")))
		}
	}
	if len(a.Failed) > 0 {
		a.Task = a.Failed[0].Name
	}
	if a.Message == "" {
		a.Message = strings.Join(msgs, "; ")
	}
	ip.sendAlert(ctx, a)
}

// sendAlert has the warning group's alert delivered: a step on the
// system queue, which strand server runs with its SMTP settings, retried
// for a while. An alert group that does not exist, or a channel that
// refuses, is logged and counted there and never fails the instance.
func (ip *interpreter) sendAlert(ctx workflow.Context, a Alert) {
	if ip.warning.Group == "" {
		return
	}
	a.DAG, a.Version, a.Instance, a.Group, a.Time = ip.inst.DAG, ip.inst.Version, ip.instanceID, ip.warning.Group, workflow.Now(ctx)
	a.Namespace = workflow.GetInfo(ctx).Namespace
	a.ScheduleTime, a.TimeZone = ip.base, cmp.Or(ip.zone, ip.base.Location().String())
	a.BusinessDate = param.Builtins(ip.base)["system.biz.date"]
	opts := shortStep
	opts.Queue = api.SystemQueue
	// No server to deliver it (a bare engine): given up after a while.
	opts.ScheduleToClose = 15 * time.Minute
	opts.Heartbeat, opts.AutoHeartbeat = time.Minute, true
	opts.Summary = fmt.Sprintf("alert %s of DAG %s instance %s to alert group %s", a.Event, a.DAG, a.Instance, a.Group)
	opts.Retry = &api.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10}
	if _, err := workflow.ExecuteStepByName[struct{}](ctx, opts, stepAlert, a).Get(ctx); err != nil {
		workflow.Logger(ctx).Warn("dag: alert not delivered", "group", a.Group, "event", a.Event, "err", err)
	}
}

// AlertOptions configure an Alerter.
type AlertOptions struct {
	// Mail is the SMTP server emails go through (nil: an email channel
	// fails with "no SMTP server").
	Mail *MailServer
	// Users finds users' email addresses (nil: a group's users get none).
	Users UserDirectory
	// Records, when set, keeps each group's recent alerts (the store's
	// records, kind "dag-alert-history").
	Records Records
	// HTTP calls webhooks (default: a client with a 30s timeout).
	HTTP   *http.Client
	Logger *slog.Logger
	// Counted, when set, is called once per channel of each alert with
	// how it went (delivered, failed), and with channel "group" and
	// outcome "missing" for an alert to a group that does not exist.
	Counted func(channel, outcome string)
}

// Records are the store's small documents, where an Alerter keeps each
// group's recent alerts (a store.Store is one).
type Records interface {
	PutRecord(ctx context.Context, r store.Record) (store.Record, error)
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
}

// Alerter delivers alerts to their groups' channels. strand server runs
// one on its system workers (RegisterAlerts) and its test route.
type Alerter struct {
	catalog *Catalog
	opts    AlertOptions
}

// NewAlerter returns an alerter reading alert groups over cl.
func NewAlerter(cl api.Cluster, opts AlertOptions) *Alerter {
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Alerter{catalog: NewCatalog(cl), opts: opts}
}

// Users is the alerter's user directory (nil: none).
func (a *Alerter) Users() UserDirectory { return a.opts.Users }

// RegisterAlerts registers the delivery of DAG alerts on w, a worker of
// api.SystemQueue (package system's runner: its Register option).
func RegisterAlerts(w *worker.Worker, a *Alerter) {
	worker.RegisterStepNamed(w, stepAlert, a.step)
}

// ChannelResult is what one channel answered.
type ChannelResult struct {
	Channel string `json:"channel"`
	// To is who the channel reached: email addresses (copies too), or the
	// webhook's URL.
	To        []string `json:"to,omitempty"`
	Delivered bool     `json:"delivered"`
	// Answer is what the SMTP server or the webhook said.
	Answer string `json:"answer"`
	// permanent: sending it again will not help.
	permanent bool
}

// SentAlert is an alert a group sent, and what each channel answered
// (at its last attempt).
type SentAlert struct {
	// ID is the same for every attempt of one alert: a retry updates its
	// entry.
	ID       string          `json:"id,omitempty"`
	Attempts int32           `json:"attempts,omitempty"`
	Alert    Alert           `json:"alert"`
	Results  []ChannelResult `json:"results"`
}

// historyKind is the store records' kind of the groups' recent alerts;
// historyLength bounds each group's.
const (
	historyKind   = "dag-alert-history"
	historyLength = 20
)

// Recent returns the last alerts a group sent, newest first (none without
// Records).
func (a *Alerter) Recent(ctx context.Context, group string) ([]SentAlert, error) {
	out := []SentAlert{}
	if a.opts.Records == nil {
		return out, nil
	}
	r, err := a.opts.Records.GetRecord(ctx, historyKind, group)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, api.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dag: recent alerts of %s: %w", group, err)
	}
	if err := json.Unmarshal(r.Value, &out); err != nil {
		return nil, fmt.Errorf("dag: recent alerts of %s: %w", group, err)
	}
	return out, nil
}

// remember adds a sent alert to its group's recent ones.
func (a *Alerter) remember(ctx context.Context, s SentAlert) {
	if a.opts.Records == nil {
		return
	}
	for range 5 { // another node's alert may have come in between
		r, err := a.opts.Records.GetRecord(ctx, historyKind, s.Alert.Group)
		var list []SentAlert
		if err == nil {
			_ = json.Unmarshal(r.Value, &list)
		} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, api.ErrNotFound) {
			a.opts.Logger.Warn("dag: recent alerts not kept", "group", s.Alert.Group, "err", err)
			return
		}
		if i := slices.IndexFunc(list, func(e SentAlert) bool { return s.ID != "" && e.ID == s.ID }); i >= 0 {
			// A retry: the channels an earlier attempt delivered keep
			// their answers.
			for _, r := range list[i].Results {
				if !slices.ContainsFunc(s.Results, func(n ChannelResult) bool { return n.Channel == r.Channel }) {
					s.Results = append(s.Results, r)
				}
			}
			slices.SortFunc(s.Results, func(x, y ChannelResult) int { return strings.Compare(x.Channel, y.Channel) })
			list = slices.Delete(list, i, i+1)
		}
		list = append([]SentAlert{s}, list...)
		list = list[:min(len(list), historyLength)]
		value, _ := json.Marshal(list)
		_, err = a.opts.Records.PutRecord(ctx, store.Record{Kind: historyKind, Key: s.Alert.Group, Value: value, Version: r.Version})
		if !errors.Is(err, store.ErrConditionFailed) {
			if err != nil {
				a.opts.Logger.Warn("dag: recent alerts not kept", "group", s.Alert.Group, "err", err)
			}
			return
		}
	}
}

func (a *Alerter) count(channel, outcome string) {
	if a.opts.Counted != nil {
		a.opts.Counted(channel, outcome)
	}
}

// step delivers an alert: each channel of its group that a previous
// attempt did not (the attempts' heartbeats carry the channels done).
func (a *Alerter) step(ctx context.Context, al Alert) (struct{}, error) {
	var done []string
	if d := step.GetInfo(ctx).HeartbeatDetails; len(d) > 0 {
		_ = json.Unmarshal(d, &done)
	}
	g, err := a.catalog.AlertGroup(ctx, al.Group)
	if errors.Is(err, api.ErrNotFound) {
		a.count("group", "missing")
		a.opts.Logger.Warn("dag: alert to an alert group that does not exist", "group", al.Group, "dag", al.DAG, "instance", al.Instance, "event", al.Event)
		return struct{}{}, workflow.NewError("strand.dag.alert_group", fmt.Sprintf("alert group %s does not exist", al.Group), true)
	}
	if err != nil {
		return struct{}{}, err
	}
	results := a.deliver(ctx, g, al, done, step.GetInfo(ctx).IdempotencyKey)
	var failed []string
	permanent := true
	for _, r := range results {
		if r.Delivered {
			done = append(done, r.Channel)
			continue
		}
		failed = append(failed, r.Channel+": "+r.Answer)
		permanent = permanent && r.permanent
	}
	if len(done) > 0 {
		_ = step.Heartbeat(ctx, done)
	}
	info := step.GetInfo(ctx)
	a.remember(ctx, SentAlert{ID: info.IdempotencyKey, Attempts: info.Attempt, Alert: al, Results: results})
	if len(failed) == 0 {
		return struct{}{}, nil
	}
	msg := fmt.Sprintf("alert group %s: %s", al.Group, strings.Join(failed, "; "))
	return struct{}{}, workflow.NewError("strand.dag.alert_failed", msg, permanent)
}

// deliver sends al through each of g's channels but those done, and says
// what each answered; each failure is logged and counted.
func (a *Alerter) deliver(ctx context.Context, g AlertGroup, al Alert, done []string, key string) []ChannelResult {
	var out []ChannelResult
	for _, ch := range g.Channels() {
		if slices.Contains(done, ch) {
			continue
		}
		var r ChannelResult
		switch ch {
		case ChannelEmail:
			r = a.email(ctx, g, al)
		case ChannelWebhook:
			r = a.webhook(ctx, g, al, key)
		}
		if r.Delivered {
			a.count(ch, "delivered")
		} else {
			a.count(ch, "failed")
			a.opts.Logger.Warn("dag: alert not delivered", "group", al.Group, "channel", ch, "dag", al.DAG, "instance", al.Instance, "event", al.Event, "answer", r.Answer)
		}
		out = append(out, r)
	}
	return out
}

// email sends al to g's users and addresses.
func (a *Alerter) email(ctx context.Context, g AlertGroup, al Alert) ChannelResult {
	r := ChannelResult{Channel: ChannelEmail}
	to := slices.Clone(g.Emails)
	var missing []string
	for _, u := range g.Users {
		if a.opts.Users == nil {
			missing = append(missing, u+" (no user directory)")
			continue
		}
		addr, err := a.opts.Users.UserEmail(ctx, u)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", u, err))
			continue
		}
		if !slices.Contains(to, addr) {
			to = append(to, addr)
		}
	}
	if len(missing) > 0 {
		a.opts.Logger.Warn("dag: alert group users without an email address", "group", al.Group, "users", missing)
	}
	r.To = append(slices.Clone(to), g.CC...)
	if len(to) == 0 {
		r.Answer, r.permanent = "no recipient has an email address: "+strings.Join(missing, ", "), true
		return r
	}
	if a.opts.Mail == nil {
		r.Answer, r.permanent = "no SMTP server: strand server --smtp-server HOST:PORT --smtp-from ADDRESS", true
		return r
	}
	subject, body := al.Email()
	answer, err := a.opts.Mail.Send(ctx, to, g.CC, subject, body)
	if err != nil {
		r.Answer, r.permanent = err.Error(), permanentMailError(err)
		return r
	}
	r.Delivered, r.Answer = true, answer
	if len(missing) > 0 {
		r.Answer += "; not to " + strings.Join(missing, ", ")
	}
	return r
}

// webhook posts al as JSON to g's URL.
func (a *Alerter) webhook(ctx context.Context, g AlertGroup, al Alert, key string) ChannelResult {
	r := ChannelResult{Channel: ChannelWebhook, To: []string{g.URL}}
	body, _ := json.Marshal(al)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		r.Answer, r.permanent = err.Error(), true
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for k, v := range g.Headers {
		req.Header.Set(k, v)
	}
	resp, err := a.opts.HTTP.Do(req)
	if err != nil {
		r.Answer = err.Error()
		return r
	}
	resp.Body.Close()
	r.Answer = "answered " + resp.Status
	r.Delivered = resp.StatusCode/100 == 2
	return r
}

// Test sends a test alert through each of a group's channels and says
// what each answered; the test is kept with the group's recent alerts.
func (a *Alerter) Test(ctx context.Context, group, by string) ([]ChannelResult, error) {
	g, err := a.catalog.AlertGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	al := Alert{Event: EventTest, Group: group, Time: time.Now().UTC(), Message: "a test alert sent by " + cmp.Or(by, "someone")}
	results := a.deliver(ctx, g, al, nil, "")
	a.remember(ctx, SentAlert{Alert: al, Results: results})
	return results, nil
}

// Email is the alert's email: its subject and plain text body, in the
// words of the DAG's user.
func (al Alert) Email() (subject, body string) {
	loc := time.UTC
	if l, err := time.LoadLocation(al.TimeZone); err == nil && al.TimeZone != "" {
		loc = l
	}
	when := ""
	if al.BusinessDate != "" {
		when = fmt.Sprintf(" (business date %s, %s)", al.BusinessDate, loc)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	switch al.Event {
	case EventTest:
		subject = fmt.Sprintf("[Strand] Test alert of alert group %s", al.Group)
		line("This is a test alert of alert group %s: its email reaches you.", al.Group)
		line("")
		line("%s", al.Message)
		line("Sent at %s.", al.Time.In(loc).Format("2006-01-02 15:04:05 MST"))
		return subject, b.String()
	case EventInstanceFailure:
		subject = fmt.Sprintf("[Strand] DAG %s failed%s", al.DAG, when)
		if len(al.Failed) > 0 {
			names := make([]string, len(al.Failed))
			for i, f := range al.Failed {
				names[i] = f.Name
			}
			subject = fmt.Sprintf("[Strand] DAG %s failed at %s%s", al.DAG, strings.Join(names, ", "), when)
		}
		line("The DAG %s (version %d) failed.", al.DAG, al.Version)
	case EventInstanceSuccess:
		subject = fmt.Sprintf("[Strand] DAG %s succeeded%s", al.DAG, when)
		line("The DAG %s (version %d) succeeded.", al.DAG, al.Version)
	case EventTaskTimeout:
		subject = fmt.Sprintf("[Strand] DAG %s: task %s timed out%s", al.DAG, al.Task, when)
		line("A task of the DAG %s (version %d) timed out.", al.DAG, al.Version)
	default:
		subject = fmt.Sprintf("[Strand] DAG %s: %s%s", al.DAG, al.Event, when)
		line("The DAG %s (version %d): %s.", al.DAG, al.Version, al.Event)
	}
	line("")
	line("Instance:      %s", al.Instance)
	if al.Namespace != "" {
		line("Namespace:     %s", al.Namespace)
	}
	if al.BusinessDate != "" {
		line("Business date: %s (scheduled %s, %s)", al.BusinessDate, al.ScheduleTime.In(loc).Format("2006-01-02 15:04:05 MST"), loc)
	}
	if al.State != "" {
		line("State:         %s", al.State)
	}
	line("At:            %s", al.Time.In(loc).Format("2006-01-02 15:04:05 MST"))
	line("")
	switch {
	case len(al.Failed) > 0:
		line("Failed tasks:")
		for _, f := range al.Failed {
			line("  %s: %s", f.Name, f.Error)
		}
	case al.Task != "":
		line("Task %s: %s", al.Task, al.Message)
	case al.Message != "":
		line("%s", al.Message)
	}
	if al.Instance != "" {
		ns := ""
		if al.Namespace != "" && al.Namespace != api.DefaultNamespace {
			ns = " --namespace " + al.Namespace
		}
		line("")
		line("To read more:")
		line("  strand dag tasks %s%s", al.Instance, ns)
		if t := cmp.Or(al.Task, firstFailed(al)); t != "" {
			line("  strand dag logs %s %s%s", al.Instance, t, ns)
		}
	}
	line("")
	line("Sent by Strand to the alert group %s.", al.Group)
	return subject, b.String()
}

func firstFailed(al Alert) string {
	if len(al.Failed) > 0 {
		return al.Failed[0].Name
	}
	return ""
}
