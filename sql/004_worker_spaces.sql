-- Worker-id spaces (one per worker-id width) that have ever been used. When Redis has no state
-- for a space listed here, Redis lost its data, and new leases wait out one TTL before issuing.
CREATE TABLE IF NOT EXISTS idmint_worker_spaces (
  worker_bits INT         NOT NULL,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (worker_bits)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
