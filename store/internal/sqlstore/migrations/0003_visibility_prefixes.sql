-- Strand schema, version 3: workflow id and business key prefixes.
--
-- A prefix filter is a range of the workflow id (or business key) index,
-- [prefix, the prefix's end), which holds exactly the values that start
-- with the prefix only in byte order. SQLite compares text byte for byte
-- (BINARY) already; PostgreSQL compares by the database's collation, which
-- in most locales does not keep a prefix's values together (en_US skips
-- punctuation at first), so its two indexes become byte-ordered ("C")
-- ones. Queries compare these columns COLLATE "C" (Dialect.Bytewise),
-- equality included, so that they can read the indexes.

-- dialect: postgres
DROP INDEX visibility_workflow;
CREATE INDEX visibility_workflow ON visibility (namespace, workflow_id COLLATE "C", start_time, run_id);
DROP INDEX visibility_business_key;
CREATE INDEX visibility_business_key ON visibility (namespace, business_key COLLATE "C", start_time, run_id);
