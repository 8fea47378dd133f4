-- Append-only log of every segment allocated: which counter values went to which node, when.
CREATE TABLE IF NOT EXISTS idmint_segments (
  id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  tag          VARCHAR(64)     NOT NULL,
  shard        INT             NOT NULL,
  epoch        INT             NOT NULL,
  first_id     BIGINT UNSIGNED NOT NULL,
  last_id      BIGINT UNSIGNED NOT NULL,
  allocated_at DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  node_id      VARCHAR(128)    NOT NULL,
  PRIMARY KEY (id),
  KEY by_tag (tag, shard, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
