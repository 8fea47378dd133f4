-- Per-tag client tokens. A tag with at least one live token serves IDs (HTTP, stream, UDP)
-- only to requests that carry one of them. Only a SHA-256 of each token is kept.
CREATE TABLE IF NOT EXISTS idmint_client_tokens (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  tag         VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  name        VARCHAR(64)     NOT NULL,
  token_hash  CHAR(64)        NOT NULL,
  created_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  revoked_at  DATETIME(3)     NULL,
  PRIMARY KEY (id),
  KEY by_tag (tag, revoked_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
