// Package resources is the resource centre of DAG pipelines, as
// DolphinScheduler has it: files (scripts, jars, SQL) uploaded to the
// server in versions, user-defined functions (UDFs) for sql tasks, and data
// sources defined once, with their secrets encrypted, instead of on every
// worker's command line. Each resource and data source belongs to the user
// who made it, who may grant its use to other users; cluster admins may use
// them all.
//
// The centre keeps everything in the store's records (store.Record), the
// server's own documents: unlike stored definitions, the API never serves
// them as they are, so what a user may not read stays unread and a secret
// never leaves the server but to a worker that needs it.
package resources

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Records is the part of the store the centre keeps its things in.
type Records interface {
	PutRecord(ctx context.Context, r store.Record) (store.Record, error)
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
	ListRecords(ctx context.Context, kind, prefix string) ([]store.Record, error)
	DeleteRecord(ctx context.Context, kind, key string, version int64) error
}

// Record kinds.
const (
	kindResource   = "dag-resource"
	kindChunk      = "dag-resource-chunk"
	kindDataSource = "dag-datasource"
	kindUDF        = "dag-udf"
)

// DefaultMaxSize is the largest resource the centre takes unless told
// otherwise (strand server --resource-max-size).
const DefaultMaxSize = 16 << 20

// chunkSize is how much of a resource's content one record holds.
const chunkSize = 512 << 10

// Options configure a Centre.
type Options struct {
	// MaxSize bounds a resource's content in bytes (default
	// DefaultMaxSize).
	MaxSize int64
	// Key encrypts data sources' secrets (AES-256-GCM, 32 bytes). Without
	// it data sources cannot be created.
	Key []byte
	// Check checks that a data source answers (default CheckConnection).
	Check func(ctx context.Context, c Connection) error
}

// Centre keeps resources, UDFs and data sources.
type Centre struct {
	st   Records
	opts Options
}

// New returns the centre over st.
func New(st Records, opts Options) (*Centre, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Key != nil && len(opts.Key) != 32 {
		return nil, fmt.Errorf("resources: the data source key has %d bytes, want 32", len(opts.Key))
	}
	if opts.Check == nil {
		opts.Check = CheckConnection
	}
	return &Centre{st: st, opts: opts}, nil
}

// MaxSize is the largest resource the centre takes.
func (c *Centre) MaxSize() int64 { return c.opts.MaxSize }

// validName is a resource's, UDF's or data source's name: a path of
// letters, digits, '_', '.', '-' and '/' (for resources), no "..".
var validName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$`)

// CheckName checks a resource's name (what a task names and the path the
// file gets in the task's working directory).
func CheckName(name string) error {
	if len(name) > 200 || !validName.MatchString(name) || slices.Contains(strings.Split(name, "/"), "..") {
		return api.InvalidArgument("name", "%q is not a resource name: letters, digits, '_', '.', '-', and '/' between path parts, at most 200", name)
	}
	return nil
}

func checkPlainName(what, name string) error {
	if len(name) > 100 || strings.Contains(name, "/") || !validName.MatchString(name) {
		return api.InvalidArgument("name", "%q is not a %s name: letters, digits, '_', '.' and '-', at most 100", name, what)
	}
	return nil
}

// ParseRef reads NAME or NAME@VERSION (version 0: the latest).
func ParseRef(ref string) (name string, version int32, err error) {
	name, v, ok := strings.Cut(ref, "@")
	if ok {
		n, perr := strconv.ParseInt(v, 10, 32)
		if perr != nil || n < 1 {
			return "", 0, api.InvalidArgument("version", "%q: want NAME or NAME@VERSION, a version from 1", ref)
		}
		version = int32(n)
	}
	if err := CheckName(name); err != nil {
		return "", 0, err
	}
	return name, version, nil
}

// Owned is who owns a thing of the centre and whom it is granted to.
type Owned struct {
	Owner string `json:"owner"`
	// Users may use it besides its owner (DolphinScheduler's relation
	// tables).
	Users []string `json:"users,omitempty"`
}

// MayUse reports whether id may use what o is.
func (o Owned) MayUse(id access.Identity) bool {
	return o.MayManage(id) || slices.Contains(o.Users, id.Name)
}

// MayManage reports whether id may change, grant or delete what o is.
func (o Owned) MayManage(id access.Identity) bool {
	return id.ClusterAdmin || id.Kind == access.KindNode || id.Name == o.Owner
}

func caller(ctx context.Context) access.Identity {
	if id, ok := access.FromContext(ctx); ok {
		return id
	}
	return access.Anonymous // in process, with no server in between
}

func denied(id access.Identity, what string) error {
	return fmt.Errorf("%w: %s %q may not %s", api.ErrPermissionDenied, id.Kind, id.Name, what)
}

// Resource is a file of the resource centre and its versions.
type Resource struct {
	Name string `json:"name"`
	Owned
	Versions  []Version `json:"versions"`
	CreatedAt time.Time `json:"created_at"`
}

// Latest is the resource's newest version.
func (r Resource) Latest() Version { return r.Versions[len(r.Versions)-1] }

// Version is one upload of a resource.
type Version struct {
	Version int32 `json:"version"`
	Size    int64 `json:"size"`
	// SHA256 is the content's hash, hex: what workers cache it by.
	SHA256     string    `json:"sha256"`
	UploadedAt time.Time `json:"uploaded_at"`
	UploadedBy string    `json:"uploaded_by,omitempty"`
	// blob names the upload's chunks, so that two uploads at once never
	// mix theirs.
	Blob string `json:"blob,omitempty"`
}

// version returns version v of r (0: the latest).
func (r Resource) version(v int32) (Version, error) {
	if v == 0 {
		return r.Latest(), nil
	}
	for _, x := range r.Versions {
		if x.Version == v {
			return x, nil
		}
	}
	return Version{}, fmt.Errorf("%w: resource %s has no version %d (its versions: 1 to %d)", api.ErrNotFound, r.Name, v, r.Latest().Version)
}

func (c *Centre) resource(ctx context.Context, name string) (Resource, int64, error) {
	rec, err := c.st.GetRecord(ctx, kindResource, name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidArgument) { // (a name no record can have)
		return Resource{}, 0, fmt.Errorf("%w: no resource %q", api.ErrNotFound, name)
	}
	if err != nil {
		return Resource{}, 0, fmt.Errorf("resources: read %s: %w", name, err)
	}
	var r Resource
	if err := json.Unmarshal(rec.Value, &r); err != nil {
		return Resource{}, 0, fmt.Errorf("resources: %s: %w", name, err)
	}
	return r, rec.Version, nil
}

// Upload stores content as a new version of the resource name (its first
// makes the caller its owner). Content over the size limit is refused and
// nothing is stored.
func (c *Centre) Upload(ctx context.Context, name string, content []byte) (Resource, error) {
	id := caller(ctx)
	if err := CheckName(name); err != nil {
		return Resource{}, err
	}
	if int64(len(content)) > c.opts.MaxSize {
		return Resource{}, fmt.Errorf("%w: resource %s has %d bytes, over the limit of %d bytes (%s; strand server --resource-max-size)",
			store.ErrPayloadTooLarge, name, len(content), c.opts.MaxSize, sizeText(c.opts.MaxSize))
	}
	r, rv, err := c.resource(ctx, name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		r = Resource{Name: name, Owned: Owned{Owner: id.Name}, CreatedAt: time.Now().UTC()}
	case err != nil:
		return Resource{}, err
	case !r.MayManage(id):
		return Resource{}, denied(id, "upload a new version of resource "+name+" (its owner is "+r.Owner+")")
	}
	sum := sha256.Sum256(content)
	var blob [8]byte
	rand.Read(blob[:])
	v := Version{Version: 1, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), UploadedAt: time.Now().UTC(), UploadedBy: id.Name,
		Blob: hex.EncodeToString(blob[:])}
	if len(r.Versions) > 0 {
		v.Version = r.Latest().Version + 1
	}
	// The chunks first: a version appears only once its content is whole.
	for i := 0; i == 0 || i*chunkSize < len(content); i++ {
		part := content[i*chunkSize : min((i+1)*chunkSize, len(content))]
		if _, err := c.st.PutRecord(ctx, store.Record{Kind: kindChunk, Key: chunkKey(name, v, i), Value: part}); err != nil {
			c.clearChunks(context.WithoutCancel(ctx), name, v)
			return Resource{}, fmt.Errorf("resources: store %s version %d: %w", name, v.Version, err)
		}
	}
	r.Versions = append(r.Versions, v)
	if _, err := c.st.PutRecord(ctx, store.Record{Kind: kindResource, Key: name, Value: mustJSON(r), Version: rv}); err != nil {
		c.clearChunks(context.WithoutCancel(ctx), name, v)
		if errors.Is(err, store.ErrConditionFailed) {
			return Resource{}, fmt.Errorf("%w: resource %s changed while this version was uploaded; upload it again", api.ErrConflict, name)
		}
		return Resource{}, fmt.Errorf("resources: store %s: %w", name, err)
	}
	return r, nil
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// chunkKey is the key of a chunk: "NAME@VERSION#BLOB#INDEX" ('@' and '#'
// are not in names).
func chunkKey(name string, v Version, i int) string {
	return fmt.Sprintf("%s%06d", chunkPrefix(name, v), i)
}

func chunkPrefix(name string, v Version) string {
	return fmt.Sprintf("%s@%d#%s#", name, v.Version, v.Blob)
}

func (c *Centre) clearChunks(ctx context.Context, name string, v Version) error {
	recs, err := c.st.ListRecords(ctx, kindChunk, chunkPrefix(name, v))
	if err != nil {
		return fmt.Errorf("resources: list the content of %s: %w", name, err)
	}
	for _, r := range recs {
		if err := c.st.DeleteRecord(ctx, kindChunk, r.Key, 0); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("resources: delete the content of %s: %w", name, err)
		}
	}
	return nil
}

// Resources lists the resources the caller may use, by name.
func (c *Centre) Resources(ctx context.Context) ([]Resource, error) {
	id := caller(ctx)
	recs, err := c.st.ListRecords(ctx, kindResource, "")
	if err != nil {
		return nil, fmt.Errorf("resources: list: %w", err)
	}
	out := []Resource{}
	for _, rec := range recs {
		var r Resource
		if err := json.Unmarshal(rec.Value, &r); err != nil {
			return nil, fmt.Errorf("resources: %s: %w", rec.Key, err)
		}
		if r.MayUse(id) || mayReadAll(id) {
			out = append(out, r)
		}
	}
	return out, nil
}

// mayReadAll: a worker (a service account with the worker role somewhere)
// reads every resource and data source, to run the tasks that name them.
func mayReadAll(id access.Identity) bool {
	if id.ClusterAdmin || id.Kind == access.KindNode {
		return true
	}
	if id.Kind != access.KindService {
		return false
	}
	for _, roles := range id.Grants {
		for _, r := range roles {
			if r.Includes(access.Worker) {
				return true
			}
		}
	}
	return false
}

// Resource describes a resource the caller may use, with its versions.
func (c *Centre) Resource(ctx context.Context, name string) (Resource, error) {
	id := caller(ctx)
	r, _, err := c.resource(ctx, name)
	if err != nil {
		return Resource{}, err
	}
	if !r.MayUse(id) && !mayReadAll(id) {
		return Resource{}, denied(id, "use resource "+name)
	}
	return r, nil
}

// Content returns version v of a resource (0: the latest) and its content.
func (c *Centre) Content(ctx context.Context, name string, v int32) (Version, []byte, error) {
	r, err := c.Resource(ctx, name)
	if err != nil {
		return Version{}, nil, err
	}
	ver, err := r.version(v)
	if err != nil {
		return Version{}, nil, err
	}
	recs, err := c.st.ListRecords(ctx, kindChunk, chunkPrefix(name, ver))
	if err != nil {
		return Version{}, nil, fmt.Errorf("resources: read %s version %d: %w", name, ver.Version, err)
	}
	content := make([]byte, 0, ver.Size)
	for _, rec := range recs {
		content = append(content, rec.Value...)
	}
	if sum := sha256.Sum256(content); hex.EncodeToString(sum[:]) != ver.SHA256 {
		return Version{}, nil, fmt.Errorf("resources: %s version %d: the stored content does not match its hash", name, ver.Version)
	}
	return ver, content, nil
}

// DeleteResource deletes a resource and every version of it.
func (c *Centre) DeleteResource(ctx context.Context, name string) error {
	id := caller(ctx)
	r, _, err := c.resource(ctx, name)
	if err != nil {
		return err
	}
	if !r.MayManage(id) {
		return denied(id, "delete resource "+name+" (its owner is "+r.Owner+")")
	}
	if err := c.st.DeleteRecord(ctx, kindResource, name, 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("resources: delete %s: %w", name, err)
	}
	for _, v := range r.Versions {
		if err := c.clearChunks(ctx, name, v); err != nil {
			return err
		}
	}
	return nil
}

// GrantResource lets user use a resource (revoke: no longer).
func (c *Centre) GrantResource(ctx context.Context, name, user string, revoke bool) (Resource, error) {
	id := caller(ctx)
	if err := checkUser(user); err != nil {
		return Resource{}, err
	}
	r, rv, err := c.resource(ctx, name)
	if err != nil {
		return Resource{}, err
	}
	if !r.MayManage(id) {
		return Resource{}, denied(id, "grant resource "+name+" (its owner is "+r.Owner+")")
	}
	r.Users = grant(r.Users, user, revoke)
	if _, err := c.st.PutRecord(ctx, store.Record{Kind: kindResource, Key: name, Value: mustJSON(r), Version: rv}); err != nil {
		return Resource{}, fmt.Errorf("resources: store %s: %w", name, conflict(err))
	}
	return r, nil
}

func checkUser(user string) error {
	if user == "" || len(user) > 256 || strings.ContainsAny(user, " \t\n\r\x00") {
		return api.InvalidArgument("user", "%q is not a user name", user)
	}
	return nil
}

func grant(users []string, user string, revoke bool) []string {
	users = slices.DeleteFunc(users, func(u string) bool { return u == user })
	if !revoke {
		users = append(users, user)
		slices.Sort(users)
	}
	return users
}

func conflict(err error) error {
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("%w: it changed meanwhile; try again", api.ErrConflict)
	}
	return err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
