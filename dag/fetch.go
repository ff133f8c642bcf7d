package dag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/workflow"
)

// Centre is what a worker reads of the server's resource centre: the
// resources tasks name, UDFs and data sources (remote or in process).
type Centre interface {
	DescribeResource(ctx context.Context, name string) (resources.Resource, error)
	// ResourceContent returns version v of a resource (0: the latest).
	ResourceContent(ctx context.Context, name string, v int32) (resources.Version, []byte, error)
	DescribeUDF(ctx context.Context, name string) (resources.UDF, error)
	ConnectDataSource(ctx context.Context, name string) (resources.Connection, error)
}

// DataSourceResolver is the task.Resolver of the data sources defined on
// the server: what a worker's sql and procedure tasks find a name they were
// not given with.
func DataSourceResolver(c Centre) task.Resolver {
	return func(ctx context.Context, name string) (task.DataSource, bool, error) {
		conn, err := c.ConnectDataSource(ctx, name)
		if errors.Is(err, api.ErrNotFound) {
			return task.DataSource{}, false, nil
		}
		if err != nil {
			return task.DataSource{}, false, err
		}
		return conn.Task(), true, nil
	}
}

type taskDirKey struct{}

// taskDir is the working directory the runner made for the task, with its
// resources in it ("" when it names none).
func taskDir(ctx context.Context) string {
	d, _ := ctx.Value(taskDirKey{}).(string)
	return d
}

// prepare makes the task's working directory and fetches its resources
// into it, each at its name's path; the caller removes it. What went where
// goes to log.
func (r *TaskRunner) prepare(ctx context.Context, t Task, log io.Writer) (string, error) {
	if r.Centre == nil {
		return "", workflow.NewError("strand.dag.resource", "this worker cannot fetch resources: it has no server to fetch them from", true)
	}
	parent := r.WorkDir
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "strand-task-")
	if err != nil {
		return "", fmt.Errorf("make the task's working directory: %w", err)
	}
	for _, ref := range t.Resources {
		if err := r.fetch(ctx, ref, dir, log); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// fetch copies a resource into dir, from the worker's cache (by content
// hash) or else from the server.
func (r *TaskRunner) fetch(ctx context.Context, ref, dir string, log io.Writer) error {
	name, v, err := resources.ParseRef(ref)
	if err != nil {
		return workflow.NewError("strand.dag.resource", err.Error(), true)
	}
	content, ver, cached, err := r.resource(ctx, name, v)
	if err != nil {
		return err
	}
	dst := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("resource %s: %w", name, err)
	}
	if err := os.WriteFile(dst, content, 0o755); err != nil {
		return fmt.Errorf("resource %s: %w", name, err)
	}
	from := "fetched"
	if cached {
		from = "cached"
	}
	fmt.Fprintf(log, "-- resource %s version %d (%d bytes, %s)\n", name, ver.Version, ver.Size, from)
	return nil
}

// resource returns version v of a resource (0: the latest), from the cache
// when its hash is there.
func (r *TaskRunner) resource(ctx context.Context, name string, v int32) ([]byte, resources.Version, bool, error) {
	res, err := r.Centre.DescribeResource(ctx, name)
	if errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrPermissionDenied) {
		return nil, resources.Version{}, false, workflow.NewError("strand.dag.resource", fmt.Sprintf("resource %s: %v", name, err), true)
	}
	if err != nil {
		return nil, resources.Version{}, false, fmt.Errorf("resource %s: %w", name, err)
	}
	var ver resources.Version
	for _, x := range res.Versions {
		if x.Version == v || v == 0 {
			ver = x
		}
	}
	if ver.Version == 0 {
		return nil, resources.Version{}, false, workflow.NewError("strand.dag.resource", fmt.Sprintf("resource %s has no version %d", name, v), true)
	}
	cache := r.cacheDir()
	path := filepath.Join(cache, ver.SHA256)
	if b, err := os.ReadFile(path); err == nil && hashOf(b) == ver.SHA256 {
		return b, ver, true, nil
	}
	ver, b, err := r.Centre.ResourceContent(ctx, name, ver.Version)
	if err != nil {
		return nil, resources.Version{}, false, fmt.Errorf("resource %s: %w", name, err)
	}
	if hashOf(b) != ver.SHA256 {
		return nil, resources.Version{}, false, fmt.Errorf("resource %s version %d: the content does not match its hash", name, ver.Version)
	}
	if err := os.MkdirAll(cache, 0o700); err == nil {
		if f, err := os.CreateTemp(cache, ".part-*"); err == nil {
			_, werr := f.Write(b)
			if cerr := f.Close(); werr == nil && cerr == nil {
				os.Rename(f.Name(), path)
			}
			os.Remove(f.Name())
		}
	}
	return b, ver, false, nil
}

func (r *TaskRunner) cacheDir() string {
	if r.ResourceCache != "" {
		return r.ResourceCache
	}
	parent := r.WorkDir
	if parent == "" {
		parent = os.TempDir()
	}
	return filepath.Join(parent, "strand-resource-cache")
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// udfs returns the statements that create an sql task's UDFs, from their
// resources.
func (r *TaskRunner) udfs(ctx context.Context, names []string) ([]task.UDF, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if r.Centre == nil {
		return nil, workflow.NewError("strand.dag.udf", "this worker cannot fetch UDFs: it has no server to fetch them from", true)
	}
	var out []task.UDF
	for _, n := range names {
		u, err := r.Centre.DescribeUDF(ctx, n)
		if errors.Is(err, api.ErrNotFound) {
			return nil, workflow.NewError("strand.dag.udf", fmt.Sprintf("UDF %s: %v", n, err), true)
		}
		if err != nil {
			return nil, fmt.Errorf("UDF %s: %w", n, err)
		}
		name, v, err := resources.ParseRef(u.Resource)
		if err != nil {
			return nil, workflow.NewError("strand.dag.udf", fmt.Sprintf("UDF %s: %v", n, err), true)
		}
		b, _, _, err := r.resource(ctx, name, v)
		if err != nil {
			return nil, err
		}
		out = append(out, task.UDF{Name: n, Text: strings.TrimSpace(string(b))})
	}
	return out, nil
}
