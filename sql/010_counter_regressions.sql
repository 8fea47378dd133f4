-- Every time a refill found a counter's high-water mark in MySQL below what Redis had already
-- installed for it (MySQL restored from a backup, or failed over to a replica that missed the
-- last allocations), and raised it in the same transaction. Append-only, for operators.
CREATE TABLE IF NOT EXISTS idmint_counter_regressions (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  tag         VARCHAR(64)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  shard       INT             NOT NULL,
  scope       VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  mysql_value BIGINT UNSIGNED NOT NULL,
  redis_value BIGINT UNSIGNED NOT NULL,
  node_id     VARCHAR(128)    NOT NULL,
  seen_at     DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  KEY by_tag (tag, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
