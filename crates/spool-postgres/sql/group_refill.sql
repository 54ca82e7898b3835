-- A fragment: how long a grouped claim that took less than asked ($3)
-- under the queue's group_rate_limit may wait before it looks again
-- (claim_limited.sql's refill_ms): one token's interval, when a group's
-- bucket is short of a token, which it then holds again. Only a bucket
-- emptied within the last interval can be short: this claim's
-- (group_spent) or one written since b.at less an interval, found on
-- group_buckets_refilled.
CASE WHEN b.group_rate_limit IS NOT NULL AND (SELECT count(*) FROM claimed) < $3
      AND (EXISTS (SELECT 1 FROM group_spent s WHERE s.tokens < 1)
           OR EXISTS (
               SELECT 1 FROM {schema}.group_buckets gb
               WHERE gb.queue_id = b.id
                 AND gb.refilled_at > b.at - ceil(b.group_rate_period_ms::double precision
                                                  / b.group_rate_limit) * interval '1 millisecond'
                 AND {group_tokens:gb} < 1))
THEN ceil(b.group_rate_period_ms::double precision / b.group_rate_limit)::bigint
END
