package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDAGsGuideTenantsAndTaskTypes runs the examples of docs/dags.md's
// "Tenants and queues" and "Python, procedure and big-data tasks" as
// written, with the strand binary against one real server; each starts its
// own strand worker.
func TestDAGsGuideTenantsAndTaskTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bin := binaries(t, "strand")
	addr := freePort(t)
	process(t, "listening on", filepath.Join(bin, "strand"), "server", "--store", "sqlite://"+filepath.Join(t.TempDir(), "strand.db"), "--listen", addr)
	for _, ex := range []struct {
		heading string
		root    bool
		want    []string
	}{
		{"### Example: tenants", true, []string{"whoami version 1 stored", "running as nobody on queue root.etl", "nobody on queue root.adhoc"}},
		{"### Example: big-data tasks", false, []string{"nightly-report version 1 stored", "rows=42",
			"command: ", "spark-submit got: --master yarn --deploy-mode cluster --class com.example.Aggregate --driver-memory 1g --num-executors 4 --executor-memory 2g --queue root.reports /opt/jobs/report.jar --day 20260228 --rows 42"}},
	} {
		t.Run(ex.heading, func(t *testing.T) {
			if ex.root && os.Geteuid() != 0 {
				t.Skip("the example runs tasks as another OS user, which needs root")
			}
			script := fencedBlock(t, filepath.Join("..", "..", "docs", "dags.md"), ex.heading)
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STRAND_SERVER=http://"+addr)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the example failed: %v\n%s", err, out)
			}
			for _, want := range ex.want {
				if !strings.Contains(string(out), want) {
					t.Fatalf("the example printed no %q:\n%s", want, out)
				}
			}
		})
	}
}
