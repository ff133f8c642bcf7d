// Package cassandra is Strand's backend for Apache Cassandra, the store the
// seed designs (Cadence, StackSaga) were built on.
//
// Everything scoped to a shard lives in one table, executions, partitioned
// by shard_id, with a type column saying which kind of row each is (shard,
// current or concrete execution, transfer/timer/replication/DLQ/cross-cluster
// task, request dedup, document metadata) and the seed's constant
// placeholder values in the key columns a kind does not use. A Commit is one
// logged batch inside that partition, conditioned with lightweight
// transactions on the shard row's range_id and each run's db_version, so
// fencing and atomicity hold as they do on SQL. History blocks and document
// bytes live in their own tables and are written before the batch that makes
// them visible. Visibility uses time-bucketed tables; see docs/storage.md.
package cassandra

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/strandhq/strand/store"
)

//go:embed schema/*.cql
var schema embed.FS

// DefaultKeyspace is the keyspace used when none is given.
const DefaultKeyspace = "strand"

// Options configure the backend.
type Options struct {
	// Hosts are the contact points, host or host:port (default port 9042).
	Hosts []string
	// Keyspace holds Strand's tables; DefaultKeyspace when empty.
	Keyspace string
	// ReplicationFactor is used when Migrate creates the keyspace
	// (SimpleStrategy); 1 when zero. Create the keyspace yourself for
	// NetworkTopologyStrategy.
	ReplicationFactor int
	// Consistency of reads and writes: QUORUM by default.
	Consistency string
	// SerialConsistency of lightweight transactions: SERIAL (default) or
	// LOCAL_SERIAL.
	SerialConsistency string
	// Timeout bounds one request on the client side; 10s when zero.
	Timeout time.Duration
	// Limits are the payload limits; DefaultLimits when zero.
	Limits store.Limits
	// MaxBatchBytes bounds the bytes one Commit sends in its conditional
	// batch; a larger batch is refused with store.ErrPayloadTooLarge
	// (Cassandra rejects mutations above half its commit log segment).
	// DefaultMaxBatchBytes when zero.
	MaxBatchBytes int
	// VisibilityBucketBytes is about how many bytes the visibility index
	// partitions of one bucket of start times (a day, then an hour, a
	// minute, a second) hold before the runs that start in it go to finer
	// buckets; DefaultVisibilityBucketBytes when zero. A partition holds at
	// most this plus what the other writers add within a second.
	VisibilityBucketBytes int64
	// PrefixScanLimit is how many runs of one bucket a workflow id or
	// business key prefix may match for a listing to read them from the
	// prefix's range of visibility_values and sort them; a bucket where it
	// matches more is read in start order through the rest of the filter's
	// index, checking the prefix on each run. DefaultPrefixScanLimit when
	// zero.
	PrefixScanLimit int
}

// DefaultPrefixScanLimit is the default of Options.PrefixScanLimit.
const DefaultPrefixScanLimit = 5000

// DefaultLimits are the payload limits of the Cassandra backend: a single
// value must fit comfortably in one mutation.
func DefaultLimits() store.Limits {
	return store.Limits{DocumentThreshold: 256 << 10, MaxPayload: 8 << 20}
}

// DefaultMaxBatchBytes is the default bound on one conditional batch.
const DefaultMaxBatchBytes = 12 << 20

var keyspaceName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,47}$`)

// Store is the Cassandra implementation of store.Store.
type Store struct {
	session  *gocql.Session
	ks       string
	rf       int
	limits   store.Limits
	maxBatch int
	serial   gocql.Consistency

	namespaces sync.Map // names known to exist

	maxBucketBytes int64
	buckets        bucketSizes
	prefixLimit    int
}

var _ store.Store = (*Store)(nil)

func invalid(field, format string, args ...any) error {
	return store.InvalidArgument(field, format, args...)
}

// Open connects to the cluster. Call Migrate before first use.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if len(opts.Hosts) == 0 {
		return nil, invalid("hosts", "no contact points")
	}
	if opts.Keyspace == "" {
		opts.Keyspace = DefaultKeyspace
	}
	if !keyspaceName.MatchString(opts.Keyspace) {
		return nil, invalid("keyspace", "%q: want a letter then letters, digits or _ (at most 48)", opts.Keyspace)
	}
	if opts.ReplicationFactor < 0 {
		return nil, invalid("replication_factor", "negative")
	}
	if opts.ReplicationFactor == 0 {
		opts.ReplicationFactor = 1
	}
	if opts.Consistency == "" {
		opts.Consistency = "QUORUM"
	}
	if opts.SerialConsistency == "" {
		opts.SerialConsistency = "SERIAL"
	}
	cons, err := gocql.ParseConsistencyWrapper(strings.ToUpper(opts.Consistency))
	if err != nil {
		return nil, invalid("consistency", "%q: want ONE, QUORUM, LOCAL_QUORUM, ALL, ...", opts.Consistency)
	}
	var serial gocql.Consistency
	switch strings.ToUpper(opts.SerialConsistency) {
	case "SERIAL":
		serial = gocql.Serial
	case "LOCAL_SERIAL":
		serial = gocql.LocalSerial
	default:
		return nil, invalid("serial_consistency", "%q: want SERIAL or LOCAL_SERIAL", opts.SerialConsistency)
	}
	if opts.Timeout < 0 {
		return nil, invalid("timeout", "negative")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Limits == (store.Limits{}) {
		opts.Limits = DefaultLimits()
	}
	if opts.MaxBatchBytes == 0 {
		opts.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if opts.VisibilityBucketBytes < 0 {
		return nil, invalid("visibility_bucket_bytes", "negative")
	}
	if opts.PrefixScanLimit < 0 {
		return nil, invalid("prefix_scan_limit", "negative")
	}
	if opts.PrefixScanLimit == 0 {
		opts.PrefixScanLimit = DefaultPrefixScanLimit
	}
	if opts.VisibilityBucketBytes == 0 {
		opts.VisibilityBucketBytes = DefaultVisibilityBucketBytes
	}
	cluster := gocql.NewCluster(opts.Hosts...)
	cluster.Consistency = cons
	cluster.SerialConsistency = serial
	cluster.Timeout = opts.Timeout
	cluster.ConnectTimeout = opts.Timeout
	cluster.NumConns = 2
	// Strand's writes are not idempotent in general; it resolves unknown
	// outcomes itself (see Commit), so the driver must not retry them.
	cluster.RetryPolicy = nil
	session, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cassandra: connect %v: %w", opts.Hosts, err)
	}
	return &Store{session: session, ks: opts.Keyspace, rf: opts.ReplicationFactor,
		limits: opts.Limits, maxBatch: opts.MaxBatchBytes, serial: serial, maxBucketBytes: opts.VisibilityBucketBytes,
		prefixLimit: opts.PrefixScanLimit}, nil
}

// Limits implements store.Store.
func (s *Store) Limits() store.Limits { return s.limits }

// Close implements store.Store.
func (s *Store) Close() error {
	s.session.Close()
	return nil
}

// Keyspace returns the keyspace the store uses.
func (s *Store) Keyspace() string { return s.ks }

// Session returns the driver session, for tools and benchmarks that measure
// the cluster beside the store.
func (s *Store) Session() *gocql.Session { return s.session }

// cql qualifies the {ks} placeholders of a statement with the keyspace.
func (s *Store) cql(stmt string) string { return strings.ReplaceAll(stmt, "{ks}", s.ks) }

// query builds a statement bound to ctx.
func (s *Store) query(ctx context.Context, stmt string, args ...any) *gocql.Query {
	return s.session.Query(s.cql(stmt), args...).WithContext(ctx)
}

// schemaExec runs an idempotent schema statement (IF [NOT] EXISTS). A
// schema change can take longer than the client's request timeout on a
// busy node while it still completes, so a timeout is retried, after the
// nodes agree on the schema, until ctx ends.
func (s *Store) schemaExec(ctx context.Context, stmt string) error {
	for {
		err := s.query(ctx, stmt).Exec()
		if err == nil || !errors.Is(err, gocql.ErrTimeoutNoResponse) || ctx.Err() != nil {
			return err
		}
		_ = s.session.AwaitSchemaAgreement(ctx)
	}
}

// DropKeyspace removes the store's keyspace and everything in it. It is
// for tests and teardown; a store is unusable afterwards.
func (s *Store) DropKeyspace(ctx context.Context) error {
	if err := s.schemaExec(ctx, `DROP KEYSPACE IF EXISTS {ks}`); err != nil {
		return fmt.Errorf("cassandra: drop keyspace %s: %w", s.ks, err)
	}
	return nil
}

// Migrate implements store.Store. Schema files are named NNNN_name.cql;
// every file of a version is applied before the version is recorded, and
// every statement is idempotent (IF NOT EXISTS), so a migration interrupted
// halfway is completed by the next run.
func (s *Store) Migrate(ctx context.Context) (from, to int, err error) {
	versions, byVersion, err := schemaVersions()
	if err != nil {
		return 0, 0, err
	}
	latest := versions[len(versions)-1]
	// A store already at the latest version (every node's restart) takes
	// no schema statement: Cassandra applies schema changes one at a time,
	// even an IF NOT EXISTS that changes nothing, so on a busy cluster they
	// queue behind other keyspaces' changes.
	if v, err := s.schemaVersion(ctx); err == nil && v >= latest {
		return v, v, nil
	}
	if err := s.schemaExec(ctx, fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS {ks}
		WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}`, s.rf)); err != nil {
		return 0, 0, fmt.Errorf("cassandra: create keyspace %s: %w", s.ks, err)
	}
	if err := s.schemaExec(ctx, `CREATE TABLE IF NOT EXISTS {ks}.schema_version (version int PRIMARY KEY, applied_at timestamp)`); err != nil {
		return 0, 0, fmt.Errorf("cassandra: schema_version: %w", err)
	}
	if err := s.session.AwaitSchemaAgreement(ctx); err != nil {
		return 0, 0, fmt.Errorf("cassandra: schema agreement: %w", err)
	}
	if from, err = s.schemaVersion(ctx); err != nil {
		return 0, 0, err
	}
	to = from
	for _, v := range versions {
		if v <= from {
			continue
		}
		for _, f := range byVersion[v] {
			body, err := fs.ReadFile(schema, f)
			if err != nil {
				return from, to, err
			}
			for _, stmt := range statements(string(body)) {
				if err := s.schemaExec(ctx, stmt); err != nil {
					return from, to, fmt.Errorf("cassandra: schema %s: %w\n%s", f, err, stmt)
				}
			}
		}
		if err := s.session.AwaitSchemaAgreement(ctx); err != nil {
			return from, to, fmt.Errorf("cassandra: schema agreement: %w", err)
		}
		if v == 3 && from > 0 {
			// The records of an older store get their visibility_values rows.
			if err := s.indexValues(ctx); err != nil {
				return from, to, fmt.Errorf("cassandra: schema version 3: %w", err)
			}
		}
		if err := s.query(ctx, `INSERT INTO {ks}.schema_version (version, applied_at) VALUES (?, ?)`, v, time.Now()).Exec(); err != nil {
			return from, to, fmt.Errorf("cassandra: record schema version %d: %w", v, err)
		}
		to = v
	}
	return from, to, nil
}

// schemaVersion reads the highest version recorded in schema_version.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	iter := s.query(ctx, `SELECT version FROM {ks}.schema_version`).Iter()
	var v, highest int
	for iter.Scan(&v) {
		highest = max(highest, v)
	}
	if err := iter.Close(); err != nil {
		return 0, fmt.Errorf("cassandra: read schema version: %w", err)
	}
	return highest, nil
}

// SchemaDigest names the schema Migrate builds: a short hex hash of every
// schema file, which changes whenever one does. Tools that keep migrated
// keyspaces for reuse (the test suite's pool of keyspaces) put it in their
// names, so that a keyspace built by older schema files is never reused.
func SchemaDigest() string {
	files, _ := fs.Glob(schema, "schema/*.cql")
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		body, _ := fs.ReadFile(schema, f)
		fmt.Fprintf(h, "%s %d\n", f, len(body))
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// schemaVersions groups the embedded schema files by version, in order.
func schemaVersions() ([]int, map[int][]string, error) {
	files, err := fs.Glob(schema, "schema/*.cql")
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	byVersion := map[int][]string{}
	var versions []int
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(path.Base(f), "_", 2)[0])
		if err != nil {
			return nil, nil, fmt.Errorf("cassandra: schema file %s: name must start with its version", f)
		}
		if _, seen := byVersion[v]; !seen {
			versions = append(versions, v)
		}
		byVersion[v] = append(byVersion[v], f)
	}
	sort.Ints(versions)
	return versions, byVersion, nil
}

// statements splits a schema file on semicolons, dropping -- comments.
func statements(body string) []string {
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	var out []string
	for _, stmt := range strings.Split(b.String(), ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}
