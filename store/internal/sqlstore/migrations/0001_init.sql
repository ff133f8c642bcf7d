-- Strand schema, version 1. Times are BIGINT milliseconds since the Unix
-- epoch (UTC); 0 means unset. Blobs start with a format byte (raw or zstd).

-- Execution store: every table is keyed by shard_id first.
CREATE TABLE shards (
  shard_id   INTEGER PRIMARY KEY,
  range_id   BIGINT  NOT NULL,
  owner      TEXT    NOT NULL,
  ack_levels BLOB    NOT NULL,
  updated_at BIGINT  NOT NULL
);

CREATE TABLE current_executions (
  shard_id           INTEGER  NOT NULL,
  namespace          TEXT     NOT NULL,
  workflow_id        TEXT     NOT NULL,
  run_id             TEXT     NOT NULL,
  create_request_id  TEXT     NOT NULL,
  state              SMALLINT NOT NULL,
  status             SMALLINT NOT NULL,
  last_write_version BIGINT   NOT NULL,
  start_time         BIGINT   NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id)
);

CREATE TABLE executions (
  shard_id           INTEGER  NOT NULL,
  namespace          TEXT     NOT NULL,
  workflow_id        TEXT     NOT NULL,
  run_id             TEXT     NOT NULL,
  state              SMALLINT NOT NULL,
  status             SMALLINT NOT NULL,
  next_event_id      BIGINT   NOT NULL,
  db_version         BIGINT   NOT NULL,
  last_write_version BIGINT   NOT NULL,
  data               BLOB     NOT NULL,
  checksum           BIGINT   NOT NULL,
  updated_at         BIGINT   NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, run_id)
);

CREATE TABLE history (
  shard_id       INTEGER NOT NULL,
  namespace      TEXT    NOT NULL,
  workflow_id    TEXT    NOT NULL,
  run_id         TEXT    NOT NULL,
  first_event_id BIGINT  NOT NULL,
  last_event_id  BIGINT  NOT NULL,
  txn_id         BIGINT  NOT NULL,
  data           BLOB    NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, run_id, first_event_id)
);

-- One table for every task queue of a shard: transfer (1), timer (2),
-- replication (3), replication DLQ (4), cross-cluster (5).
CREATE TABLE tasks (
  shard_id    INTEGER  NOT NULL,
  category    SMALLINT NOT NULL,
  partition   TEXT     NOT NULL,
  fire_time   BIGINT   NOT NULL,
  task_id     BIGINT   NOT NULL,
  type        SMALLINT NOT NULL,
  namespace   TEXT     NOT NULL,
  workflow_id TEXT     NOT NULL,
  run_id      TEXT     NOT NULL,
  data        BLOB     NOT NULL,
  PRIMARY KEY (shard_id, category, partition, fire_time, task_id)
);

CREATE TABLE requests (
  shard_id    INTEGER  NOT NULL,
  namespace   TEXT     NOT NULL,
  workflow_id TEXT     NOT NULL,
  kind        SMALLINT NOT NULL,
  request_id  TEXT     NOT NULL,
  run_id      TEXT     NOT NULL,
  created_at  BIGINT   NOT NULL,
  expires_at  BIGINT   NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, kind, request_id)
);
CREATE INDEX requests_expiry ON requests (shard_id, expires_at);

CREATE TABLE documents (
  shard_id    INTEGER NOT NULL,
  namespace   TEXT    NOT NULL,
  workflow_id TEXT    NOT NULL,
  run_id      TEXT    NOT NULL,
  id          TEXT    NOT NULL,
  size        BIGINT  NOT NULL,
  stored_size BIGINT  NOT NULL,
  created_at  BIGINT  NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, run_id, id)
);

CREATE TABLE document_blobs (
  shard_id    INTEGER NOT NULL,
  namespace   TEXT    NOT NULL,
  workflow_id TEXT    NOT NULL,
  run_id      TEXT    NOT NULL,
  id          TEXT    NOT NULL,
  data        BLOB    NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, run_id, id)
);

-- Metadata store.
CREATE TABLE namespaces (
  name         TEXT   PRIMARY KEY,
  description  TEXT   NOT NULL,
  retention_ms BIGINT NOT NULL,
  data         BLOB   NOT NULL,
  version      BIGINT NOT NULL,
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL
);

CREATE TABLE nodes (
  id           TEXT    PRIMARY KEY,
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  grp          TEXT    NOT NULL,
  address      TEXT    NOT NULL,
  started_at   BIGINT  NOT NULL,
  heartbeat_at BIGINT  NOT NULL,
  expires_at   BIGINT  NOT NULL
);

CREATE TABLE definitions (
  type        TEXT    NOT NULL,
  version     INTEGER NOT NULL,
  sha1        TEXT    NOT NULL,
  body        BLOB    NOT NULL,
  grp         TEXT    NOT NULL,
  created_at  BIGINT  NOT NULL,
  modified_at BIGINT  NOT NULL,
  modified_by TEXT    NOT NULL,
  PRIMARY KEY (type, version)
);

-- Visibility store.
CREATE TABLE visibility (
  namespace    TEXT     NOT NULL,
  run_id       TEXT     NOT NULL,
  workflow_id  TEXT     NOT NULL,
  type         TEXT     NOT NULL,
  status       SMALLINT NOT NULL,
  start_time   BIGINT   NOT NULL,
  close_time   BIGINT   NOT NULL,
  business_key TEXT     NOT NULL,
  attributes   BLOB     NOT NULL,
  version      BIGINT   NOT NULL,
  PRIMARY KEY (namespace, run_id)
);
CREATE INDEX visibility_start ON visibility (namespace, start_time, run_id);
CREATE INDEX visibility_status ON visibility (namespace, status, start_time);
CREATE INDEX visibility_type ON visibility (namespace, type, start_time);
CREATE INDEX visibility_workflow ON visibility (namespace, workflow_id);
CREATE INDEX visibility_business_key ON visibility (namespace, business_key);

CREATE TABLE visibility_attributes (
  namespace TEXT NOT NULL,
  run_id    TEXT NOT NULL,
  name      TEXT NOT NULL,
  value     TEXT NOT NULL,
  PRIMARY KEY (namespace, run_id, name)
);
CREATE INDEX visibility_attributes_value ON visibility_attributes (namespace, name, value);
