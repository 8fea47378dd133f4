-- Interleaved counters: every sequence value of the tag is id_offset (mod stride); the counter
-- k of MySQL and Redis stands for k * stride + id_offset. Fixed at creation. Existing tags get
-- stride 1 and offset 0, which is what they have always issued.
ALTER TABLE idmint_tags ADD COLUMN stride INT NOT NULL DEFAULT 1 AFTER max_id_limit, ADD COLUMN id_offset INT NOT NULL DEFAULT 0 AFTER stride;
