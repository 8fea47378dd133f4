-- Counters of rule tags are kept per scope: "<app name>/<period>", so each (rule, app,
-- period) has its own high-water mark. Segment tags use the empty scope.
ALTER TABLE idmint_counters ADD COLUMN scope VARCHAR(100) NOT NULL DEFAULT '' AFTER shard;
ALTER TABLE idmint_counters DROP PRIMARY KEY, ADD PRIMARY KEY (tag, shard, scope);
ALTER TABLE idmint_segments ADD COLUMN scope VARCHAR(100) NOT NULL DEFAULT '' AFTER shard
