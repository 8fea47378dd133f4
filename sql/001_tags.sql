-- Tag definitions. A deleted tag keeps its row (deleted = 1) so a tag re-created under the
-- same name continues above every ID the old one issued; `epoch` counts re-creations and is
-- part of the tag's Redis keys, so state from before a reset is never served again.
CREATE TABLE IF NOT EXISTS idmint_tags (
  tag            VARCHAR(64)     NOT NULL,
  mode           VARCHAR(16)     NOT NULL,
  order_mode     VARCHAR(8)      NOT NULL DEFAULT 'global',
  layout         VARCHAR(8)      NOT NULL DEFAULT 'plain',
  shards         INT             NOT NULL DEFAULT 1,
  app_id         INT             NOT NULL DEFAULT 0,
  app_bits       INT             NOT NULL DEFAULT 0,
  step           BIGINT          NOT NULL,
  min_step       BIGINT          NOT NULL,
  max_step       BIGINT          NOT NULL,
  target_seconds INT             NOT NULL,
  prefetch       DOUBLE          NOT NULL,
  max_id_limit   BIGINT UNSIGNED NOT NULL,
  node_block     INT             NOT NULL,
  enabled        TINYINT(1)      NOT NULL DEFAULT 1,
  description    VARCHAR(255)    NOT NULL DEFAULT '',
  options        LONGTEXT        NULL,
  epoch          INT             NOT NULL DEFAULT 1,
  counter_floor  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  deleted        TINYINT(1)      NOT NULL DEFAULT 0,
  created_at     DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at     DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
