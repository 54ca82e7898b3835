//! The macros that turn the cases into tests, and the one list of cases.
//!
//! The list lives in [`__with_cases!`](crate::__with_cases) alone; both the generated tests and
//! [`CASES`](crate::CASES) come from it, and the compiler checks that every
//! listed name is a case.

/// Expands to one `#[test]` per case of [`cases`](crate::cases). Each calls
/// `$make().await` for a fresh fixture (a fresh, empty store) and runs the
/// case on a multi-thread runtime with two workers (see
/// [`run_case`](crate::run_case)).
///
/// `conformance_suite!(make)` runs the contention case with 100,000 tasks and
/// 100 claimers; `conformance_suite!(make, contention: TASKS, CLAIMERS)` runs
/// it with other numbers, for stores where each operation is a round trip.
///
/// The tests are named after the cases; call the macro inside a module of its
/// own (`mod conformance { spool_testkit::conformance_suite!(super::make); }`)
/// so they do not clash with other tests, or to run it twice (say, on a
/// manual and on a wall clock).
#[macro_export]
macro_rules! conformance_suite {
    ($make:path) => {
        $crate::conformance_suite!($make, contention: 100_000, 100);
    };
    ($make:path, contention: $tasks:expr, $claimers:expr) => {
        $crate::__with_cases!(__case_tests!($make));

        #[test]
        fn every_task_handed_out_exactly_once_under_contention() {
            $crate::run_case($make, |fx| {
                $crate::cases::exactly_once_under_contention(fx, $tasks, $claimers)
            });
        }
    };
}

/// Calls `$crate::$callback!(args; case case …)` with every case but the
/// contention one, which takes parameters.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_cases {
    ($callback:ident!($($args:tt)*)) => {
        $crate::$callback!($($args)*;
            enqueue_returns_unique_increasing_ids
            enqueue_batch_results_follow_request_order
            enqueue_batch_is_atomic
            enqueue_refuses_more_than_10000_tasks
            enqueue_defaults_kind_to_queue_name
            enqueue_applies_queue_defaults
            enqueue_keeps_given_fields
            payload_round_trips_exactly
            enqueue_refuses_payload_over_max_payload
            enqueue_creates_queue_on_first_use
            duplicate_key_while_live_returns_existing_id
            duplicate_key_within_one_batch
            key_deduplicates_after_ack_and_cancel
            dedup_window_counts_from_completion
            key_is_free_again_after_dedup_window
            keys_are_per_queue
            traceparent_is_kept_from_enqueue_to_every_claim
            malformed_traceparent_is_refused
            claim_takes_tasks_in_priority_run_at_id_order
            claim_respects_max
            paused_queue_yields_nothing_until_resumed
            scheduled_task_is_not_claimable_before_run_at
            claim_leases_counts_attempt_and_draws_fresh_token
            claim_lease_is_requested_or_queue_lease
            task_lease_ms_wins_over_claim_lease
            claim_refuses_out_of_range_requests
            claim_on_unknown_queue_is_empty
            long_poll_returns_when_a_task_is_enqueued
            long_poll_returns_when_a_scheduled_task_becomes_due
            long_poll_returns_empty_after_wait
            ack_deletes_the_task
            ack_with_wrong_token_is_lease_lost_and_changes_nothing
            ack_of_unknown_task_is_not_found
            ack_with_reschedule_rearms_the_task
            ack_after_lease_expired_and_reclaimed_is_lease_lost
            ack_many_results_are_independent
            fail_schedules_retry_after_exponential_backoff
            fail_honours_retry_at
            fail_with_discard_is_dead
            fail_on_last_attempt_is_dead
            fail_keeps_last_five_errors_oldest_first
            fail_truncates_long_messages
            fail_with_stale_token_is_lease_lost
            release_makes_task_ready_without_counting_attempt
            snooze_schedules_task_without_counting_attempt
            release_and_snooze_with_stale_token_are_lease_lost
            extend_pushes_lease_expiry
            extend_with_stale_token_is_lease_lost
            extended_lease_outlives_its_original_expiry
            expired_lease_makes_task_ready_for_another_worker
            expired_lease_on_last_attempt_is_dead
            expired_lease_token_is_refused_everywhere
            update_changes_payload_run_at_and_priority
            update_of_leased_task_is_lease_held
            update_by_key
            update_of_unknown_task_is_not_found
            update_refuses_payload_over_max_payload
            cancel_deletes_in_any_state
            token_operations_after_cancel_are_not_found
            cancel_by_key
            cancel_of_unknown_task_is_not_found
            lease_wait_answers_at_once_with_the_lost_leases
            lease_wait_wakes_when_a_task_is_cancelled
            lease_wait_answers_empty_after_its_wait
            lease_wait_refuses_out_of_range_requests
            get_by_id_and_by_key
            get_unknown_is_not_found
            retry_makes_dead_task_ready
            retry_of_task_that_is_not_dead_is_bad_request
            retry_dead_revives_every_dead_task_of_the_queue
            revived_tasks_are_claimed_in_priority_run_at_id_order
            a_failure_like_the_one_before_it_is_recorded
            list_filters_by_state
            list_orders_by_id_and_by_attempts
            list_pages_return_every_task_once
            list_refuses_out_of_range_limit
            stats_count_per_state_and_kind
            stats_report_oldest_ready_age
            stats_report_paused
            queue_settings_round_trip
            invalid_queue_settings_are_refused
            unknown_queue_is_not_found
            changing_settings_keeps_tasks
            a_change_keeps_the_fields_it_does_not_name
            a_settings_change_does_not_undo_a_concurrent_pause
            max_leased_caps_tasks_leased_at_once
            an_expired_lease_frees_its_slot
            rate_limit_hands_out_the_burst_then_holds
            rate_limit_refills_at_its_rate
            stats_show_the_rate_limit_tokens_left
            a_rate_limited_long_poll_wakes_on_refill
            a_long_poll_on_a_full_queue_wakes_when_a_slot_frees
            limits_changed_live_take_effect
            limits_round_trip_and_are_removed_one_at_a_time
            a_limit_below_the_leased_count_takes_nothing_back
            a_task_keeps_its_group
            claims_take_groups_in_turn
            a_large_backlog_does_not_hold_back_a_small_group
            priorities_order_tasks_within_a_group
            group_concurrency_caps_each_group
            an_expired_lease_frees_its_group_slot
            a_long_poll_on_a_full_group_wakes_when_a_slot_frees
            group_concurrency_changed_live_takes_effect
            groups_report_waiting_and_leased
            each_group_has_a_rate_limit_of_its_own
            each_group_refills_at_its_rate
            groups_show_each_groups_tokens_left
            a_group_keeps_its_bucket_between_tasks
            a_long_poll_held_back_by_a_group_wakes_on_refill
            a_group_rate_limit_changed_live_takes_effect
            an_invalid_group_rate_limit_is_refused
            a_task_waits_for_every_parent
            a_batch_names_parents_by_position
            a_dead_parent_cancels_dependents_down_the_chain
            a_cancelled_parent_counts_as_failed
            parents_that_ended_before_enqueue
            a_batch_callback_runs_once_every_member_ended
            only_a_parents_end_releases_its_dependents
            pending_tasks_count_list_and_update
            a_long_poll_wakes_when_a_dependent_is_released
            a_dependent_reads_its_parents_results
            every_waiting_task_receives_the_result
            a_result_goes_only_with_an_ack_that_counts
            due_task_shows_ready_everywhere
            expired_lease_shows_ready_everywhere
            schedules_round_trip
            a_tick_fires_once
            concurrent_fires_enqueue_one_task
            bad_ticks_are_refused
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __case_tests {
    ($make:path; $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                $crate::run_case($make, $crate::cases::$case);
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __case_names {
    (; $($case:ident)*) => {
        /// The name of every case the suite runs, the contention case included.
        pub const CASES: &[&str] = &[
            $(stringify!($case),)*
            "every_task_handed_out_exactly_once_under_contention",
        ];
    };
}
