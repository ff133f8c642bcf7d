-- Strand schema, version 4: the server's own records and the audit log,
-- for access control.
--
-- records holds small documents by kind and key (users, access tokens,
-- role grants), each with a version that conditional writes compare. A
-- kind is listed whole or by a key prefix, a range of the primary key that
-- holds exactly the keys with the prefix only in byte order: SQLite
-- compares text so (BINARY); PostgreSQL's key column is COLLATE "C", as
-- version 3 made the prefix indexes of visibility.
--
-- audit_log holds the changes made through the API, one row per entry,
-- keyed by (time_ms, id): the key is the listing order (newest first, ids
-- breaking ties, byte order again) and the purge's (oldest first). The
-- indexes by namespace and by actor end with the same key, so a filtered
-- page, and the page after a cursor, is one index range read backwards.
-- On SQLite both tables are in the runs' file, not the visibility file.

CREATE TABLE records (
  kind       TEXT   NOT NULL,
  key        TEXT   NOT NULL,
  value      BLOB   NOT NULL,
  version    BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (kind, key)
);

CREATE TABLE audit_log (
  time_ms   BIGINT  NOT NULL,
  id        TEXT    NOT NULL,
  namespace TEXT    NOT NULL,
  actor     TEXT    NOT NULL,
  remote    TEXT    NOT NULL,
  action    TEXT    NOT NULL,
  target    TEXT    NOT NULL,
  run_id    TEXT    NOT NULL,
  status    INTEGER NOT NULL,
  detail    BLOB    NOT NULL,
  PRIMARY KEY (time_ms, id)
);

-- dialect: postgres
ALTER TABLE records ALTER COLUMN key TYPE TEXT COLLATE "C";
ALTER TABLE audit_log ALTER COLUMN id TYPE TEXT COLLATE "C";

-- dialect: all
CREATE INDEX audit_log_namespace ON audit_log (namespace, time_ms, id);
CREATE INDEX audit_log_actor ON audit_log (actor, time_ms, id);
