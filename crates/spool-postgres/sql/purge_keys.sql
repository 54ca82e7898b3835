-- Forgets up to $1 idempotency keys whose dedup window has passed.
DELETE FROM {schema}.keys
WHERE ctid IN (
    SELECT ctid FROM {schema}.keys
    WHERE expires_at <= now()
    LIMIT $1
)
