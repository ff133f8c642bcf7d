package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/server"
	"github.com/strandhq/strand/store"
)

// runsPageSize is the console's default page of runs.
const runsPageSize = 50

// RunsPageFilter names the measurement of the console's runs page in a
// VisibilityReport.
const RunsPageFilter = "console runs page over HTTP"

// measureRunsPage measures what the console's runs page asks of a real
// server over the data set, as a browser sends it: a first page of 50 runs
// and one count per status, at once, over at most six connections (a
// browser's limit per host). Each measured call is the time until the last
// of them answered.
func measureRunsPage(ctx context.Context, cfg VisibilityConfig) (QueryResult, error) {
	eng, err := engine.Open(ctx, cfg.Store, engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return QueryResult{}, err
	}
	defer eng.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return QueryResult{}, err
	}
	srv := &http.Server{Handler: server.New(eng, server.Options{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln) // until Close
	}()
	defer func() {
		srv.Close()
		<-served
	}()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 6, MaxIdleConnsPerHost: 6}}
	defer client.CloseIdleConnections()
	base := "http://" + ln.Addr().String() + "/api/v1/namespaces/" + cfg.Namespace
	post := func(path string, body, out any) error {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("POST %s: %s: %s", path, resp.Status, msg)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}
	page := func() (int64, error) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs error
		var rows int64
		fail := func(err error) {
			mu.Lock()
			errs = errors.Join(errs, err)
			mu.Unlock()
		}
		wg.Go(func() {
			var out struct {
				Runs []json.RawMessage `json:"runs"`
			}
			if err := post("/workflow-search", map[string]any{"page_size": runsPageSize}, &out); err != nil {
				fail(err)
			}
			rows = int64(len(out.Runs))
		})
		for _, status := range store.RunStatusNames() {
			wg.Go(func() {
				var out struct {
					Count int64 `json:"count"`
				}
				if err := post("/workflow-count", map[string]any{"statuses": []string{status}}, &out); err != nil {
					fail(err)
				}
			})
		}
		wg.Wait()
		return rows, errs
	}
	return measure(ctx, cfg, fmt.Sprintf("page %d", runsPageSize), RunsPageFilter, page)
}
