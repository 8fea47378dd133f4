-- The high-water mark of every (tag, shard) counter: every counter value up to max_id has
-- been handed to some Redis as part of a segment. Rows are never deleted.
CREATE TABLE IF NOT EXISTS idmint_counters (
  tag        VARCHAR(64)     NOT NULL,
  shard      INT             NOT NULL,
  max_id     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  step       BIGINT          NOT NULL,
  updated_at DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (tag, shard)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
