package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strandhq/strand/internal/testdb"
)

// TestResourceCentre drives the resource centre as DolphinScheduler's users
// would, against a real strand server with access control and a real
// strand worker started without --datasource, on SQLite and PostgreSQL
// stores: two versions of a resource, one task using version 1 and one the
// latest; a resource over the size limit refused; a data source defined on
// the server used by an sql task, its password never shown; a data source
// whose connection fails refused; a user without a grant applying a DAG
// that names the resource or data source refused at the line and column,
// storing nothing, and allowed once granted; a UDF used by an sql task on
// PostgreSQL, refused on a SQLite data source.
func TestResourceCentre(t *testing.T) {
	pgBase := testdb.PostgresURL(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			storeURL := "sqlite://" + filepath.Join(dir, "strand.db")
			args := []string{}
			if backend == "postgres" {
				storeURL = testdb.WithSearchPath(t, pgBase, testdb.NewSchema(t, pgBase))
				keyFile := filepath.Join(dir, "ds.key")
				os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
				args = append(args, "--datasource-key-file", keyFile)
			}
			resourceCentre(t, dir, storeURL, pgBase, args)
		})
	}
}

func resourceCentre(t *testing.T, dir, storeURL, pgURL string, serverArgs []string) {
	bin := binaries(t, "strand")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("STRAND_TOKEN", "")
	const password = "a very secret password"
	for _, args := range [][]string{
		{"user", "create", "root", "--admin", "--password-stdin"},
		{"user", "create", "alice", "--password-stdin"},
		{"user", "create", "bob", "--password-stdin"},
	} {
		if out, code := runIn(t, password+"\n", append(args, "--store", storeURL)...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	addr := freePort(t)
	url := "http://" + addr
	process(t, "listening on", filepath.Join(bin, "strand"), append([]string{"server", "--store", storeURL, "--listen", addr,
		"--console=false", "--resource-max-size", "4096"}, serverArgs...)...)
	if out, code := runIn(t, password+"\n", "login", "--server", url, "--name", "root", "--password-stdin"); code != 0 {
		t.Fatalf("login: %d %s", code, out)
	}
	root := func(args ...string) string {
		t.Helper()
		out, code := runIn(t, "", append(args, "--server", url)...)
		if code != 0 {
			t.Fatalf("strand %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	root("user", "create", "w", "--service")
	root("user", "grant", "w", "--namespace", "default", "--roles", "worker")
	root("user", "grant", "alice", "--namespace", "default", "--roles", "operator")
	root("user", "grant", "bob", "--namespace", "default", "--roles", "operator")
	token := func(user string) string {
		return between(root("token", "create", "--user", user, "--name", user, "--ttl", "1h", "-o", "json"), `"token": "`, `"`)
	}
	aliceToken, bobToken, workerToken := token("alice"), token("bob"), token("w")
	as := func(tok string, args ...string) (string, int) {
		t.Helper()
		return runIn(t, "", append(args, "--server", url, "--token", tok, "--retry-for", "1ms")...)
	}
	alice := func(args ...string) string {
		t.Helper()
		out, code := as(aliceToken, args...)
		if code != 0 {
			t.Fatalf("strand %s (as alice): exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}
	// A worker given no data source: it finds them on the server.
	process(t, "running the groups", filepath.Join(bin, "strand"), "worker", "--server", url, "--token", workerToken, "--group", "default",
		"--workdir", filepath.Join(dir))

	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Resources: two versions; one over the limit stores nothing.
	alice("resource", "upload", "etl.sh", file("v1.sh", "echo script version one\n"))
	if out := alice("resource", "upload", "etl.sh", file("v2.sh", "echo script version two\n")); !strings.Contains(out, "etl.sh version 2 stored") {
		t.Fatalf("second upload: %s", out)
	}
	alice("resource", "upload", "lib/rows.sql", file("rows.sql", "select 1\n"))
	if out, code := as(aliceToken, "resource", "upload", "big.jar", file("big.jar", strings.Repeat("x", 5000))); code == 0 ||
		!strings.Contains(out, "resource big.jar has 5000 bytes, over the limit of 4096 bytes (4 KiB") {
		t.Fatalf("a resource over the limit: exit %d: %s", code, out)
	}
	if out := alice("resource", "list"); strings.Contains(out, "big.jar") || !strings.Contains(out, "etl.sh") {
		t.Fatalf("resource list after a refused upload: %s", out)
	}
	if out := alice("resource", "show", "etl.sh"); !strings.Contains(out, "owner:  alice") || strings.Count(out, "alice") < 3 {
		t.Fatalf("resource show: %s", out)
	}
	if out := alice("resource", "get", "etl.sh@1"); out != "echo script version one\n" {
		t.Fatalf("resource get etl.sh@1: %q", out)
	}

	// Data sources: a SQLite database the server and the worker reach; one
	// whose check fails stores nothing.
	wh := filepath.Join(dir, "warehouse.db")
	db, err := sql.Open("sqlite", wh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE sales (amount INTEGER); INSERT INTO sales VALUES (30), (12)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	alice("datasource", "create", "wh", "--type", "sqlite", "--url", "sqlite:"+wh)
	if out, code := as(aliceToken, "datasource", "create", "gone", "--type", "sqlite", "--url", "sqlite:"+filepath.Join(dir, "nowhere.db")); code == 0 ||
		!strings.Contains(out, "data source gone does not answer") || !strings.Contains(out, "nothing was stored") {
		t.Fatalf("a data source whose check fails: exit %d: %s", code, out)
	}
	const dbPassword = "pg-password-not-to-be-shown"
	pwFile := file("pg.pw", dbPassword+"\n")
	alice("datasource", "create", "pg", "--type", "postgresql", "--url", pgURL, "--password", "@"+pwFile)
	if out, code := as(aliceToken, "datasource", "create", "pgdown", "--type", "postgresql", "--url", "postgres://nobody@127.0.0.1:1/none", "--password", "@"+pwFile); code == 0 ||
		!strings.Contains(out, "data source pgdown does not answer") || strings.Contains(out, dbPassword) {
		t.Fatalf("a postgresql data source that does not answer: exit %d: %s", code, out)
	}
	list := alice("datasource", "list", "-o", "json")
	if strings.Contains(list, "gone") || strings.Contains(list, "pgdown") || !strings.Contains(list, `"wh"`) || strings.Contains(list, dbPassword) {
		t.Fatalf("datasource list: %s", list)
	}
	if out := alice("datasource", "show", "pg"); !strings.Contains(out, "kept encrypted") || strings.Contains(out, dbPassword) {
		t.Fatalf("datasource show: %s", out)
	}
	// The connection with its secret is for workers and admins alone.
	for who, tok := range map[string]string{"alice": aliceToken, "bob": bobToken} {
		req, _ := http.NewRequest("GET", url+"/api/v1/datasources/pg/connection", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s reading a data source's connection: %s", who, resp.Status)
		}
	}

	// A UDF on PostgreSQL, its text a resource.
	alice("resource", "upload", "fn/add_tax.sql", file("add_tax.sql",
		"CREATE OR REPLACE FUNCTION pg_temp.add_tax(x numeric) RETURNS numeric AS $$ SELECT round(x * 1.2, 2) $$ LANGUAGE sql;\n"))
	alice("udf", "create", "add_tax", "--type", "postgresql", "--resource", "fn/add_tax.sql")
	if out, code := as(aliceToken, "udf", "create", "lite", "--type", "sqlite", "--resource", "fn/add_tax.sql"); code == 0 || !strings.Contains(out, "SQLite cannot create functions in SQL") {
		t.Fatalf("a UDF for SQLite: exit %d: %s", code, out)
	}

	pipeline := file("pipeline.yaml", `name: nightly
tasks:
  - name: pinned
    type: shell
    resources: [etl.sh@1, lib/rows.sql]
    script: bash etl.sh && cat lib/rows.sql
  - name: latest
    type: shell
    resources: [etl.sh]
    script: bash etl.sh
  - name: total
    type: sql
    datasource: wh
    query: true
    sql: SELECT sum(amount) AS total FROM sales
    outputs: {total: total}
  - name: taxed
    type: sql
    datasource: pg
    udfs: [add_tax]
    query: true
    sql: SELECT pg_temp.add_tax(${total}) AS taxed
    outputs: {taxed: taxed}
    upstream: [total]
`)
	// Bob may use none of it: refused at each place, nothing stored.
	out, code := as(bobToken, "dag", "apply", "-f", pipeline)
	if code != 2 || !strings.Contains(out, `line 5, column 17: tasks[0].resources[0]: you may not use resource "etl.sh": ask its owner alice for a grant`) ||
		!strings.Contains(out, `line 9, column 17: tasks[1].resources[0]: you may not use resource "etl.sh"`) ||
		!strings.Contains(out, `line 13, column 17: tasks[2].datasource: you may not use data source "wh": ask its owner alice for a grant`) ||
		!strings.Contains(out, `line 20, column 12: tasks[3].udfs[0]: you may not use UDF "add_tax"`) {
		t.Fatalf("bob applying alice's resources: exit %d: %s", code, out)
	}
	// Nor through the definitions API, around dag apply.
	text, _ := os.ReadFile(pipeline)
	body, _ := json.Marshal(map[string]any{"type": "dag/nightly", "body": text})
	req, _ := http.NewRequest("POST", url+"/api/v1/definitions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bobToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), `you may not use resource \"etl.sh\"`) {
		t.Fatalf("bob storing the DAG through the definitions API: %s %s", resp.Status, msg)
	}
	if out := root("dag", "list"); strings.Contains(out, "nightly") {
		t.Fatalf("a refused definition was stored: %s", out)
	}
	// A UDF on a SQLite data source is refused at its place.
	if out, code := as(aliceToken, "dag", "apply", "-f", file("lite.yaml", "name: lite\ntasks:\n  - {name: q, type: sql, datasource: wh, udfs: [add_tax], sql: select 1}\n")); code != 2 ||
		!strings.Contains(out, `line 3, column 49: tasks[0].udfs[0]: UDF "add_tax": the task's data source is SQLite, which cannot create functions in SQL`) {
		t.Fatalf("a UDF on a SQLite data source: exit %d: %s", code, out)
	}

	// A resource not uploaded yet is a warning at its place; the DAG is
	// stored.
	if out, code := as(aliceToken, "dag", "apply", "-f", file("later.yaml", "name: later\ntasks:\n  - {name: a, type: shell, resources: [later.sh], script: bash later.sh}\n")); code != 0 ||
		!strings.Contains(out, `later.yaml: line 3, column 40: tasks[0].resources[0]: no resource "later.sh" (yet): create it before running later`) {
		t.Fatalf("a resource not uploaded yet: exit %d: %s", code, out)
	}
	// An update checks the connection again and keeps the password.
	alice("datasource", "update", "pg", "--type", "postgresql", "--url", pgURL, "--description", "the warehouse")
	if out := alice("datasource", "show", "pg"); !strings.Contains(out, "kept encrypted") {
		t.Fatalf("datasource show after an update: %s", out)
	}

	// Alice runs it: version 1 and the latest, the server's data sources,
	// the UDF.
	alice("dag", "apply", "-f", pipeline)
	run := alice("dag", "run", "nightly", "--wait")
	if !strings.Contains(run, "total=42") || !strings.Contains(run, "taxed=50.40") {
		t.Fatalf("dag run: %s", run)
	}
	id := between(run, "started instance ", "\n")
	if out := alice("dag", "logs", id, "pinned"); !strings.Contains(out, "script version one") || !strings.Contains(out, "select 1") ||
		!strings.Contains(out, "resource etl.sh version 1") {
		t.Fatalf("the task on version 1: %s", out)
	}
	if out := alice("dag", "logs", id, "latest"); !strings.Contains(out, "script version two") {
		t.Fatalf("the task on the latest version: %s", out)
	}

	// Granted, bob may apply a DAG naming them; revoked, no longer.
	alice("resource", "grant", "etl.sh", "bob")
	alice("datasource", "grant", "wh", "bob")
	bobs := file("bobs.yaml", "name: bobs\ntasks:\n  - {name: a, type: shell, resources: [etl.sh], script: bash etl.sh}\n  - {name: b, type: sql, datasource: wh, sql: select 1}\n")
	if out, code := as(bobToken, "dag", "apply", "-f", bobs); code != 0 {
		t.Fatalf("bob applying with grants: exit %d: %s", code, out)
	}
	alice("datasource", "revoke", "wh", "bob")
	if out, code := as(bobToken, "dag", "apply", "-f", bobs); code != 2 || !strings.Contains(out, `you may not use data source "wh"`) {
		t.Fatalf("bob applying after a revoke: exit %d: %s", code, out)
	}
	if out, code := as(bobToken, "datasource", "delete", "wh"); code == 0 || !strings.Contains(out, "permission denied") {
		t.Fatalf("bob deleting alice's data source: exit %d: %s", code, out)
	}
}
