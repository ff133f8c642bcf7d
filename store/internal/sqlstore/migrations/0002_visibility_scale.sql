-- Strand schema, version 2: visibility for millions of runs (issue 14).
--
-- Listing: every index a filter is served by ends with (start_time,
-- run_id), the listing order, so a first page, and the page after a
-- cursor, is one index range read backwards, whatever the filter's
-- selectivity. Attribute rows carry their run's start time for the same
-- reason.
--
-- Counting: counters per (namespace, type, status), per (namespace, start
-- hour, type, status) and per (namespace, attribute name, value), kept by
-- triggers in the transaction of every change to visibility and
-- visibility_attributes, so no writer can miss them. SQLite (one writer at
-- a time) updates the counters in its triggers. PostgreSQL's triggers
-- append to *_deltas tables instead, so concurrent writers never wait on,
-- or deadlock over, a shared counter row; the store folds the deltas into
-- the counters now and then (sqlstore.compactCounts), and a count adds the
-- counters and the deltas in one statement.
--
-- An hour is floor(start_time / 3 600 000), written so that SQL's
-- truncating division floors negative times too.

DROP INDEX visibility_status;
CREATE INDEX visibility_status ON visibility (namespace, status, start_time, run_id);
DROP INDEX visibility_type;
CREATE INDEX visibility_type ON visibility (namespace, type, start_time, run_id);
CREATE INDEX visibility_type_status ON visibility (namespace, type, status, start_time, run_id);
DROP INDEX visibility_workflow;
CREATE INDEX visibility_workflow ON visibility (namespace, workflow_id, start_time, run_id);
DROP INDEX visibility_business_key;
CREATE INDEX visibility_business_key ON visibility (namespace, business_key, start_time, run_id);

ALTER TABLE visibility_attributes ADD COLUMN start_time BIGINT NOT NULL DEFAULT 0;
UPDATE visibility_attributes SET start_time = (SELECT v.start_time FROM visibility v
  WHERE v.namespace = visibility_attributes.namespace AND v.run_id = visibility_attributes.run_id);
DROP INDEX visibility_attributes_value;
CREATE INDEX visibility_attributes_value ON visibility_attributes (namespace, name, value, start_time, run_id);

CREATE TABLE visibility_counts (
  namespace TEXT     NOT NULL,
  type      TEXT     NOT NULL,
  status    SMALLINT NOT NULL,
  n         BIGINT   NOT NULL,
  PRIMARY KEY (namespace, type, status)
);

CREATE TABLE visibility_hour_counts (
  namespace  TEXT     NOT NULL,
  start_hour BIGINT   NOT NULL,
  type       TEXT     NOT NULL,
  status     SMALLINT NOT NULL,
  n          BIGINT   NOT NULL,
  PRIMARY KEY (namespace, start_hour, type, status)
);

CREATE TABLE visibility_attribute_counts (
  namespace TEXT   NOT NULL,
  name      TEXT   NOT NULL,
  value     TEXT   NOT NULL,
  n         BIGINT NOT NULL,
  PRIMARY KEY (namespace, name, value)
);

-- Written by PostgreSQL's triggers only; empty on SQLite.
CREATE TABLE visibility_count_deltas (
  namespace  TEXT     NOT NULL,
  type       TEXT     NOT NULL,
  status     SMALLINT NOT NULL,
  start_hour BIGINT   NOT NULL,
  n          BIGINT   NOT NULL
);

CREATE TABLE visibility_attribute_count_deltas (
  namespace TEXT   NOT NULL,
  name      TEXT   NOT NULL,
  value     TEXT   NOT NULL,
  n         BIGINT NOT NULL
);

INSERT INTO visibility_counts (namespace, type, status, n)
  SELECT namespace, type, status, COUNT(*) FROM visibility GROUP BY namespace, type, status;
INSERT INTO visibility_hour_counts (namespace, start_hour, type, status, n)
  SELECT namespace, (start_time - ((start_time % 3600000) + 3600000) % 3600000) / 3600000, type, status, COUNT(*)
  FROM visibility GROUP BY namespace, (start_time - ((start_time % 3600000) + 3600000) % 3600000) / 3600000, type, status;
INSERT INTO visibility_attribute_counts (namespace, name, value, n)
  SELECT namespace, name, value, COUNT(*) FROM visibility_attributes GROUP BY namespace, name, value;

-- dialect: sqlite
CREATE TRIGGER visibility_counts_insert AFTER INSERT ON visibility BEGIN
  INSERT INTO visibility_counts (namespace, type, status, n) VALUES (new.namespace, new.type, new.status, 1)
    ON CONFLICT (namespace, type, status) DO UPDATE SET n = n + 1;
  INSERT INTO visibility_hour_counts (namespace, start_hour, type, status, n)
    VALUES (new.namespace, (new.start_time - ((new.start_time % 3600000) + 3600000) % 3600000) / 3600000, new.type, new.status, 1)
    ON CONFLICT (namespace, start_hour, type, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER visibility_counts_delete AFTER DELETE ON visibility BEGIN
  UPDATE visibility_counts SET n = n - 1 WHERE namespace = old.namespace AND type = old.type AND status = old.status;
  UPDATE visibility_hour_counts SET n = n - 1 WHERE namespace = old.namespace
    AND start_hour = (old.start_time - ((old.start_time % 3600000) + 3600000) % 3600000) / 3600000
    AND type = old.type AND status = old.status;
  DELETE FROM visibility_hour_counts WHERE namespace = old.namespace
    AND start_hour = (old.start_time - ((old.start_time % 3600000) + 3600000) % 3600000) / 3600000
    AND type = old.type AND status = old.status AND n = 0;
END;

CREATE TRIGGER visibility_counts_update AFTER UPDATE OF type, status, start_time ON visibility
  WHEN old.type <> new.type OR old.status <> new.status OR old.start_time <> new.start_time BEGIN
  UPDATE visibility_counts SET n = n - 1 WHERE namespace = old.namespace AND type = old.type AND status = old.status;
  UPDATE visibility_hour_counts SET n = n - 1 WHERE namespace = old.namespace
    AND start_hour = (old.start_time - ((old.start_time % 3600000) + 3600000) % 3600000) / 3600000
    AND type = old.type AND status = old.status;
  DELETE FROM visibility_hour_counts WHERE namespace = old.namespace
    AND start_hour = (old.start_time - ((old.start_time % 3600000) + 3600000) % 3600000) / 3600000
    AND type = old.type AND status = old.status AND n = 0;
  INSERT INTO visibility_counts (namespace, type, status, n) VALUES (new.namespace, new.type, new.status, 1)
    ON CONFLICT (namespace, type, status) DO UPDATE SET n = n + 1;
  INSERT INTO visibility_hour_counts (namespace, start_hour, type, status, n)
    VALUES (new.namespace, (new.start_time - ((new.start_time % 3600000) + 3600000) % 3600000) / 3600000, new.type, new.status, 1)
    ON CONFLICT (namespace, start_hour, type, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER visibility_attribute_counts_insert AFTER INSERT ON visibility_attributes BEGIN
  INSERT INTO visibility_attribute_counts (namespace, name, value, n) VALUES (new.namespace, new.name, new.value, 1)
    ON CONFLICT (namespace, name, value) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER visibility_attribute_counts_delete AFTER DELETE ON visibility_attributes BEGIN
  UPDATE visibility_attribute_counts SET n = n - 1 WHERE namespace = old.namespace AND name = old.name AND value = old.value;
  DELETE FROM visibility_attribute_counts WHERE namespace = old.namespace AND name = old.name AND value = old.value AND n = 0;
END;

CREATE TRIGGER visibility_attribute_counts_update AFTER UPDATE OF name, value ON visibility_attributes
  WHEN old.name <> new.name OR old.value <> new.value BEGIN
  UPDATE visibility_attribute_counts SET n = n - 1 WHERE namespace = old.namespace AND name = old.name AND value = old.value;
  DELETE FROM visibility_attribute_counts WHERE namespace = old.namespace AND name = old.name AND value = old.value AND n = 0;
  INSERT INTO visibility_attribute_counts (namespace, name, value, n) VALUES (new.namespace, new.name, new.value, 1)
    ON CONFLICT (namespace, name, value) DO UPDATE SET n = n + 1;
END;

-- dialect: postgres
CREATE FUNCTION visibility_count_delta() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO visibility_count_deltas (namespace, type, status, start_hour, n)
      VALUES (OLD.namespace, OLD.type, OLD.status, (OLD.start_time - ((OLD.start_time % 3600000) + 3600000) % 3600000) / 3600000, -1);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO visibility_count_deltas (namespace, type, status, start_hour, n)
      VALUES (NEW.namespace, NEW.type, NEW.status, (NEW.start_time - ((NEW.start_time % 3600000) + 3600000) % 3600000) / 3600000, 1);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER visibility_counts_insert_delete AFTER INSERT OR DELETE ON visibility
  FOR EACH ROW EXECUTE FUNCTION visibility_count_delta();
CREATE TRIGGER visibility_counts_update AFTER UPDATE OF type, status, start_time ON visibility
  FOR EACH ROW WHEN (OLD.type <> NEW.type OR OLD.status <> NEW.status OR OLD.start_time <> NEW.start_time)
  EXECUTE FUNCTION visibility_count_delta();

CREATE FUNCTION visibility_attribute_count_delta() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO visibility_attribute_count_deltas (namespace, name, value, n) VALUES (OLD.namespace, OLD.name, OLD.value, -1);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO visibility_attribute_count_deltas (namespace, name, value, n) VALUES (NEW.namespace, NEW.name, NEW.value, 1);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER visibility_attribute_counts_insert_delete AFTER INSERT OR DELETE ON visibility_attributes
  FOR EACH ROW EXECUTE FUNCTION visibility_attribute_count_delta();
CREATE TRIGGER visibility_attribute_counts_update AFTER UPDATE OF name, value ON visibility_attributes
  FOR EACH ROW WHEN (OLD.name <> NEW.name OR OLD.value <> NEW.value)
  EXECUTE FUNCTION visibility_attribute_count_delta();
