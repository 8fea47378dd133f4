-- The named Redis server a tag's segment and rule state lives on ("default" is REDIS_URL;
-- REDIS_URLS names others). Changed only by moving the tag, which also increments `epoch`,
-- so the state it had on the old server is never served again.
ALTER TABLE idmint_tags ADD COLUMN redis_name VARCHAR(32) NOT NULL DEFAULT 'default' AFTER counter_floor;
