//! Every statement the store runs, rendered once for its schema.
//!
//! The statements live in `sql/*.sql`, each with a header saying what it
//! does and what its parameters are. Templates name the schema `{schema}`,
//! the notification channel `{channel}` and a task's columns `{task}`;
//! [`Sql::new`] fills them in. The steps both claim strategies share are a
//! fragment of their own (`sql/claim_steps.sql`), put in where a template
//! names `{claim_steps}`; so is the count of a rate-limit bucket's tokens
//! (`sql/bucket_tokens.sql`, `{bucket_tokens}`), which the limited claim
//! and the unlocked look at the bucket share, and of whether a queue holds
//! tasks a claim could take (`sql/ready_waits.sql`, `{ready_waits}`),
//! which both ask when the limits let a claim take nothing. The schema
//! name is validated ([`crate::config::Schema`]), so nothing user-supplied
//! is ever spliced in unchecked.

use spool_core::TaskState;

use crate::config::Schema;

/// The columns every statement answering tasks selects, read by
/// [`crate::row::StoredTask`]; `db_now` is the statement's clock, by which
/// states are derived.
const TASK_COLUMNS: &str = "t.id, t.kind, t.state, t.priority, t.run_at, t.attempt, \
    t.max_attempts, t.lease_ms, t.lease_owner, t.lease_token, t.lease_expires_at, t.key, \
    t.payload_json, t.payload, t.errors, t.created_at, t.updated_at, t.traceparent, \
    t.grp, t.after_ids, t.waiting_count, t.parents_failed, t.if_parent_fails, \
    t.has_dependents, {schema}.now_ms() AS db_now";

/// What a list's state filter keeps: tasks *shown* in that state. Expired
/// leases are written down before a list runs, so stored `leased` is leased.
fn state_filter(state: Option<TaskState>) -> &'static str {
    match state {
        None => "true",
        Some(TaskState::Ready) => {
            "(t.state = 'ready' OR (t.state = 'scheduled' AND t.run_at <= now()))"
        }
        Some(TaskState::Scheduled) => "(t.state = 'scheduled' AND t.run_at > now())",
        Some(TaskState::Leased) => "t.state = 'leased'",
        Some(TaskState::Dead) => "t.state = 'dead'",
        Some(TaskState::Pending) => "t.state = 'pending'",
    }
}

/// How a claim takes its tasks: in claim order (`sql/claim_steps.sql`),
/// or group by group in turn (`sql/claim_group_steps.sql`).
#[derive(Clone, Copy)]
enum Steps {
    InOrder,
    InTurn,
}

/// The claim steps, put in where a template says `{claim_steps}`, each
/// ending in `sql/claim_update.sql`; and what a limited claim's template
/// (`sql/claim_limited.sql`) says of groups: the group to keep as the
/// cursor (`{last_turn}`) and how long a full group holds a waiting claim
/// back (`{group_wait}`), and which queues it claims from
/// (`{grouped_guard}`).
/// `limit` is how many tasks the steps may take at most: `$3` (the claim's
/// max), or what a limited claim computed.
fn with_claim_steps(template: &str, steps: Steps, limit: &str) -> String {
    let (fragment, last_turn, group_wait, grouped_guard, group_spent, group_refill) = match steps {
        Steps::InOrder => (
            include_str!("../sql/claim_steps.sql"),
            "NULL::text",
            "NULL::bigint",
            "NOT (group_concurrency IS NOT NULL OR has_groups)",
            "group_spent AS (SELECT NULL::double precision AS tokens WHERE false)",
            "NULL::bigint",
        ),
        Steps::InTurn => (
            include_str!("../sql/claim_group_steps.sql"),
            "(SELECT p.grp FROM picked p JOIN claimed c ON c.n = p.n ORDER BY p.n DESC LIMIT 1)",
            include_str!("../sql/group_wait.sql"),
            "(group_concurrency IS NOT NULL OR has_groups)",
            include_str!("../sql/group_spent.sql"),
            include_str!("../sql/group_refill.sql"),
        ),
    };
    let steps = template
        .replace("{claim_steps}", fragment)
        .replace("{claim_update}", include_str!("../sql/claim_update.sql"))
        .replace("{group_spent}", group_spent)
        .replace("{group_refill}", group_refill);
    with_group_tokens(&steps)
        .replace("{limit}", limit)
        .replace("{last_turn}", last_turn)
        .replace("{group_wait}", group_wait)
        .replace("{grouped_guard}", grouped_guard)
}

/// A statement with `sql/group_bucket_tokens.sql` put in where it says
/// `{group_tokens:gb}`, reading the bucket of group_buckets row `gb`.
fn with_group_tokens(template: &str) -> String {
    template.replace(
        "{group_tokens:gb}",
        &include_str!("../sql/group_bucket_tokens.sql").replace("{bucket}", "gb"),
    )
}

/// An enqueue statement with `sql/mark_grouped.sql` put in where it says
/// `{mark_grouped}`; `queue_id` is how the statement names its queue's id.
fn with_mark_grouped(template: &str, queue_id: &str) -> String {
    template.replace(
        "{mark_grouped}",
        &include_str!("../sql/mark_grouped.sql").replace("{queue_id}", queue_id),
    )
}

/// A statement with `sql/ready_waits.sql` put in where it says
/// `{ready_waits}`; `queue_id` is how the statement names its queue's id.
fn with_ready_waits(template: &str, queue_id: &str) -> String {
    template.replace(
        "{ready_waits}",
        &include_str!("../sql/ready_waits.sql").replace("{queue_id}", queue_id),
    )
}

/// How `sql/claim_limited.sql` names its queue's id.
const LIMITED_QUEUE_ID: &str = "(SELECT id FROM b)";

/// How many claims of its size the limits must leave room for, as a claim
/// ahead of the lock counts them, for it to claim ahead: near a limit,
/// claims ahead on several connections would each lease what only one of
/// them may keep, and give the rest back.
const AHEAD: &str = "4";

/// What a limited claim may take: the allowance its queue's limits leave.
const ALLOWANCE: &str = "(SELECT allowance FROM q)";

/// The list filters in a fixed order: no filter, then each state.
const LIST_FILTERS: [Option<TaskState>; 6] = [
    None,
    Some(TaskState::Scheduled),
    Some(TaskState::Ready),
    Some(TaskState::Leased),
    Some(TaskState::Dead),
    Some(TaskState::Pending),
];

/// The rendered statements.
#[derive(Debug)]
pub(crate) struct Sql {
    pub(crate) enqueue_prepare: String,
    pub(crate) create_queue: String,
    pub(crate) enqueue_insert: String,
    pub(crate) enqueue_keyless: String,
    /// The single enqueue into each generation ([`crate::rotate::CurrentGen`]).
    pub(crate) enqueue_one: [String; GENERATIONS],
    pub(crate) claim: String,
    pub(crate) claim_global: String,
    /// A claim from a queue with limits, under `lock_limited_queue`.
    pub(crate) claim_limited: String,
    /// A claim from a queue with limits, before `lock_limited_queue`
    /// ([`crate::ops::claim_ahead`]).
    pub(crate) claim_ahead: String,
    /// What settles a claim ahead, under `lock_limited_queue`.
    pub(crate) settle_limited: String,
    /// A claim from a queue with groups, under `lock_limited_queue`.
    pub(crate) claim_grouped: String,
    /// A queue's groups with tasks waiting or leased (`Store::groups`).
    pub(crate) groups: String,
    pub(crate) lock_limited_queue: String,
    /// `lock_limited_queue` that answers no row rather than wait for the
    /// lock ([`crate::ops::claim_pace`]).
    pub(crate) try_lock_limited_queue: String,
    /// A queue's rate-limit bucket, read without its lock.
    pub(crate) peek_bucket: String,
    pub(crate) next_due: String,
    /// `sql/ack_many.sql` reading the whole task table.
    pub(crate) ack_many: String,
    /// `sql/ack_many.sql` reading one partition, indexed as
    /// [`PARTITIONS`]: for a batch whose tokens all name it
    /// ([`crate::values::leased_in`]).
    pub(crate) ack_in: [String; PARTITIONS.len()],
    pub(crate) give_back: String,
    pub(crate) extend: String,
    pub(crate) fail: String,
    pub(crate) task_exists: String,
    pub(crate) get_task: String,
    pub(crate) lock_task: String,
    pub(crate) find_key: String,
    pub(crate) rewrite_task: String,
    pub(crate) cancel: String,
    pub(crate) leases_held: String,
    pub(crate) retry_dead: String,
    list_by_id: Vec<String>,
    list_by_attempts: Vec<String>,
    pub(crate) stats_refresh: String,
    pub(crate) stats_cached: String,
    /// The rate-limited queues' tokens left, for `Store::stats`.
    pub(crate) rate_tokens: String,
    pub(crate) put_queue: String,
    pub(crate) get_queue: String,
    /// `get_queue`, the row locked until the transaction ends.
    pub(crate) lock_queue: String,
    pub(crate) set_paused: String,
    pub(crate) clock: String,
    pub(crate) expired_leases: String,
    pub(crate) expire: String,
    pub(crate) promote_due: String,
    /// Dependencies (README.md, "Dependencies"; [`crate::deps`]).
    pub(crate) deps_next_id: String,
    pub(crate) deps_parents: String,
    pub(crate) deps_wait: String,
    pub(crate) deps_take_edges: String,
    pub(crate) deps_lock_children: String,
    pub(crate) deps_write: String,
    pub(crate) deps_read: String,
    pub(crate) deps_drop_results: String,
    pub(crate) purge_keys: String,
    pub(crate) put_schedule: String,
    pub(crate) list_schedules: String,
    pub(crate) get_schedule: String,
    pub(crate) delete_schedule: String,
    pub(crate) fire_schedule: String,
    pub(crate) vacuum_lock: String,
    pub(crate) vacuum_targets: String,
    /// VACUUM of each of [`PARTITIONS`], in that order.
    pub(crate) vacuum: [String; PARTITIONS.len()],
    pub(crate) vacuum_unlock: String,
    pub(crate) rotate_due: String,
    /// Per generation of the ring, indexed by it: [`crate::rotate`].
    pub(crate) rotate_count: [String; GENERATIONS],
    pub(crate) rotate_move: [String; GENERATIONS],
    pub(crate) rotate_held: [String; GENERATIONS],
    pub(crate) rotate_lock: [String; GENERATIONS],
    pub(crate) rotate_truncate: [String; GENERATIONS],
}

/// The task table's partitions (migration 6): the ring's generations, in
/// order, then the parked tasks.
pub(crate) const PARTITIONS: [&str; 4] = ["tasks_g0", "tasks_g1", "tasks_g2", "tasks_parked"];

/// How many generations the ring of task partitions has (migration 6).
pub(crate) const GENERATIONS: usize = 3;

/// The ack (`sql/ack_many.sql`), whose `{tasks}` is the table it reads.
const ACK: &str = include_str!("../sql/ack_many.sql");

/// A template rendered once per generation, `{gen}` filled in.
fn per_generation(template: &str, schema: &Schema) -> [String; GENERATIONS] {
    std::array::from_fn(|g| render(&template.replace("{gen}", &g.to_string()), schema))
}

/// The count of a limited queue's live leases (`sql/live_leases.sql`).
const LIVE_LEASES: &str = include_str!("../sql/live_leases.sql");

/// What makes `LIVE_LEASES` count only the leases of other transactions
/// (`sql/settle_limited.sql`): a row's xmin names the transaction that
/// wrote its version.
const OTHERS: &str = " AND xmin <> pg_current_xact_id()::xid";

/// Fills in a template's placeholders.
fn render(template: &str, schema: &Schema) -> String {
    template
        .replace("{bucket_tokens}", include_str!("../sql/bucket_tokens.sql"))
        .replace("{live_leases}", &LIVE_LEASES.replace("{also}", ""))
        .replace("{others_leases}", &LIVE_LEASES.replace("{also}", OTHERS))
        .replace("{task}", TASK_COLUMNS)
        .replace("{schema}", &schema.ident())
        .replace("{channel}", &format!("'{}'", schema.channel()))
}

impl Sql {
    pub(crate) fn new(schema: &Schema) -> Sql {
        let r = |template: &str| render(template, schema);
        let lists = |template: &str| {
            LIST_FILTERS
                .iter()
                .map(|s| r(&template.replace("{filter}", state_filter(*s))))
                .collect()
        };
        Sql {
            enqueue_prepare: r(include_str!("../sql/enqueue_prepare.sql")),
            create_queue: r(include_str!("../sql/create_queue.sql")),
            enqueue_insert: r(&with_mark_grouped(
                include_str!("../sql/enqueue_insert.sql"),
                "$1",
            )),
            enqueue_keyless: r(&with_mark_grouped(
                include_str!("../sql/enqueue_keyless.sql"),
                "(SELECT id FROM q)",
            )),
            enqueue_one: per_generation(include_str!("../sql/enqueue_one.sql"), schema),
            claim: r(&with_claim_steps(
                include_str!("../sql/claim.sql"),
                Steps::InOrder,
                "$3",
            )),
            claim_global: r(&with_claim_steps(
                include_str!("../sql/claim_global.sql"),
                Steps::InOrder,
                "$3",
            )),
            claim_limited: r(&with_claim_steps(
                &with_ready_waits(include_str!("../sql/claim_limited.sql"), LIMITED_QUEUE_ID),
                Steps::InOrder,
                ALLOWANCE,
            )),
            claim_ahead: r(&with_claim_steps(
                &include_str!("../sql/claim_ahead.sql").replace("{ahead}", AHEAD),
                Steps::InOrder,
                "$3",
            )),
            settle_limited: r(include_str!("../sql/settle_limited.sql")),
            claim_grouped: r(&with_claim_steps(
                &with_ready_waits(include_str!("../sql/claim_limited.sql"), LIMITED_QUEUE_ID),
                Steps::InTurn,
                ALLOWANCE,
            )),
            groups: r(&with_group_tokens(include_str!("../sql/groups.sql"))),
            lock_limited_queue: r(
                &include_str!("../sql/lock_limited_queue.sql").replace("{skip_locked}", "")
            ),
            try_lock_limited_queue: r(&include_str!("../sql/lock_limited_queue.sql")
                .replace("{skip_locked}", "SKIP LOCKED")),
            peek_bucket: r(&with_ready_waits(
                include_str!("../sql/peek_bucket.sql"),
                "b.id",
            )),
            next_due: r(include_str!("../sql/next_due.sql")),
            ack_many: r(&ACK.replace("{tasks}", "{schema}.tasks")),
            ack_in: PARTITIONS
                .map(|partition| r(&ACK.replace("{tasks}", &format!("{{schema}}.{partition}")))),
            give_back: r(include_str!("../sql/give_back.sql")),
            extend: r(include_str!("../sql/extend.sql")),
            fail: r(include_str!("../sql/fail.sql")),
            task_exists: r(include_str!("../sql/task_exists.sql")),
            get_task: r(include_str!("../sql/get_task.sql")),
            lock_task: r(include_str!("../sql/lock_task.sql")),
            find_key: r(include_str!("../sql/find_key.sql")),
            rewrite_task: r(include_str!("../sql/rewrite_task.sql")),
            cancel: r(include_str!("../sql/cancel.sql")),
            leases_held: r(include_str!("../sql/leases_held.sql")),
            retry_dead: r(include_str!("../sql/retry_dead.sql")),
            list_by_id: lists(include_str!("../sql/list_by_id.sql")),
            list_by_attempts: lists(include_str!("../sql/list_by_attempts.sql")),
            stats_refresh: r(include_str!("../sql/stats_refresh.sql")),
            stats_cached: r(include_str!("../sql/stats_cached.sql")),
            rate_tokens: r(include_str!("../sql/rate_tokens.sql")),
            put_queue: r(include_str!("../sql/put_queue.sql")),
            get_queue: r(include_str!("../sql/get_queue.sql")),
            lock_queue: r(&format!(
                "{} FOR UPDATE",
                include_str!("../sql/get_queue.sql")
            )),
            set_paused: r(include_str!("../sql/set_paused.sql")),
            clock: r(include_str!("../sql/clock.sql")),
            expired_leases: r(include_str!("../sql/expired_leases.sql")),
            expire: r(include_str!("../sql/expire.sql")),
            promote_due: r(include_str!("../sql/promote_due.sql")),
            deps_next_id: r(include_str!("../sql/deps_next_id.sql")),
            deps_parents: r(include_str!("../sql/deps_parents.sql")),
            deps_wait: r(include_str!("../sql/deps_wait.sql")),
            deps_take_edges: r(include_str!("../sql/deps_take_edges.sql")),
            deps_lock_children: r(include_str!("../sql/deps_lock_children.sql")),
            deps_write: r(include_str!("../sql/deps_write.sql")),
            deps_read: r(include_str!("../sql/deps_read.sql")),
            deps_drop_results: r(include_str!("../sql/deps_drop_results.sql")),
            purge_keys: r(include_str!("../sql/purge_keys.sql")),
            put_schedule: r(include_str!("../sql/put_schedule.sql")),
            list_schedules: r(include_str!("../sql/list_schedules.sql")),
            get_schedule: r(include_str!("../sql/get_schedule.sql")),
            delete_schedule: r(include_str!("../sql/delete_schedule.sql")),
            fire_schedule: r(include_str!("../sql/fire_schedule.sql")),
            vacuum_lock: r(include_str!("../sql/vacuum_lock.sql")),
            vacuum_targets: r(include_str!("../sql/vacuum_targets.sql")),
            vacuum: PARTITIONS
                .map(|table| r(&include_str!("../sql/vacuum.sql").replace("{table}", table))),
            vacuum_unlock: r(include_str!("../sql/vacuum_unlock.sql")),
            rotate_due: r(include_str!("../sql/rotate_due.sql")),
            rotate_count: per_generation(include_str!("../sql/rotate_count.sql"), schema),
            rotate_move: per_generation(include_str!("../sql/rotate_move.sql"), schema),
            rotate_held: per_generation(include_str!("../sql/rotate_held.sql"), schema),
            rotate_lock: per_generation(include_str!("../sql/rotate_lock.sql"), schema),
            rotate_truncate: per_generation(include_str!("../sql/rotate_truncate.sql"), schema),
        }
    }

    fn filter_index(state: Option<TaskState>) -> usize {
        LIST_FILTERS.iter().position(|s| *s == state).unwrap_or(0)
    }

    /// The list statement in id order for `state`.
    pub(crate) fn list_by_id(&self, state: Option<TaskState>) -> &str {
        &self.list_by_id[Self::filter_index(state)]
    }

    /// The list statement in attempts order for `state`.
    pub(crate) fn list_by_attempts(&self, state: Option<TaskState>) -> &str {
        &self.list_by_attempts[Self::filter_index(state)]
    }
}

/// Renders a migration for `schema`.
pub(crate) fn render_migration(template: &str, schema: &Schema) -> String {
    render(template, schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        let schema = Schema::new("s").unwrap_or_else(|e| panic!("{e}"));
        let sql = Sql::new(&schema);
        let all = format!("{sql:?}");
        for p in [
            "{schema}",
            "{channel}",
            "{task}",
            "{filter}",
            "{claim_steps}",
            "{claim_update}",
            "{last_turn}",
            "{group_wait}",
            "{mark_grouped}",
            "{queue_id}",
            "{limit}",
            "{gen}",
            "{table}",
            "{skip_locked}",
            "{bucket_tokens}",
            "{ready_waits}",
            "{group_spent}",
            "{group_refill}",
            "{group_tokens:gb}",
            "{bucket}",
        ] {
            assert!(!all.contains(p), "{p} left in a statement");
        }
        assert!(sql.claim.contains("\"s\".tasks"));
        for s in LIST_FILTERS {
            assert!(sql.list_by_id(s).contains(state_filter(s)));
        }
    }
}
