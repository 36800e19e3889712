//! The broker conformance suite: one set of cases, written once against the traits of
//! `asynq_core::broker`, that every backend must pass alike. A third-party backend runs it
//! exactly as the memory and Redis brokers do:
//!
//! ```ignore
//! use asynq_conformance::{BrokerFactory, Capability};
//!
//! struct MyFactory;
//!
//! impl BrokerFactory for MyFactory {
//!     type Broker = MyBroker;
//!     type Store = MyBroker;
//!     fn name(&self) -> &'static str { "mine" }
//!     fn lacks(&self) -> &'static [Capability] { &[] }
//!     async fn broker(&self, clock: Arc<dyn Clock>) -> MyBroker { MyBroker::with_clock(clock) }
//!     async fn broker_with_archive_limits(&self, clock: Arc<dyn Clock>, limits: ArchiveLimits) -> MyBroker {
//!         MyBroker::with_clock(clock).archive_limits(limits)
//!     }
//!     fn store(&self, broker: &MyBroker) -> MyBroker { broker.clone() }
//! }
//!
//! asynq_conformance::broker_conformance!(MyFactory); // in a test file: one #[tokio::test] per case
//! ```
//!
//! The suite is cut by callers, as the contract is. Its cases come in parts, each needing only
//! some traits of the broker under test, and a backend runs the parts it implements:
//! - `worker`: the cases of the worker server's traits
//!   ([`WorkerBroker`](asynq_core::broker::WorkerBroker): dequeue, finish, forward, leases and
//!   their recovery, the janitor, server state, health). They put tasks in and look at them
//!   through the factory's [`Store`](BrokerFactory::Store), since a worker's traits can do
//!   neither, and need no provided method overridden;
//! - `producer`: the cases of the producer's trait
//!   ([`Enqueue`]: placement, known queues, batches, ID conflicts,
//!   uniqueness locks, debounce), which enqueue through the broker and look through the store;
//! - `manage`: the operator's actions ([`OperatorBroker`](asynq_core::broker::OperatorBroker):
//!   running, archiving and deleting tasks one by one and in bulk, removing queues, listing
//!   groups, the history), which act through the broker and set up and look through a store with
//!   every trait (a backend's full broker over the same data);
//! - `full`: the rest, which need every trait ([`Broker`](asynq_core::Broker)).
//!
//! `broker_conformance!(MyFactory)` runs them all; a worker-only backend runs
//! `broker_conformance!(MyFactory, parts = [worker])`, a producer-only one `parts = [producer]`,
//! an operator-only one `parts = [manage]`, each with a store on what it serves (the workspace's
//! own tests do so for brokers with the worker's, the producer's or the operator's traits alone). The bounds of each case say what it needs, so a part
//! the backend does not implement does not compile, and a test of this crate checks that every
//! case is listed in exactly one part, the part whose bound its signature names.
//!
//! A backend plugs in through a [`BrokerFactory`], which makes a fresh, empty broker on a given
//! clock, and [`broker_conformance!`](crate::broker_conformance) expands to one `#[tokio::test]`
//! per case, named after it (`case_requeue_goes_to_the_front`, ...). Each case builds its own
//! broker on a [`SimulatedClock`](asynq_core::SimulatedClock) that starts at
//! [`fixture::START_SECS`], drives it only through the broker traits (building requests with
//! [`asynq_core::resolve_enqueue`]) and asserts on what the traits report. The cases follow the
//! Go asynq semantics of the wire-format spec; a difference between two backends is a bug in
//! one of them.
//!
//! Nothing sleeps and nothing reads tokio's clock: all wall-clock time comes from the simulated
//! clock, so a factory may do real network IO. A backend that deliberately cannot support what a
//! case needs lists that [`Capability`] in [`BrokerFactory::lacks`]; the case then says so on
//! stderr and stops (see [`lacking`]), and the generated `capabilities_are_declared` test prints
//! which cases that leaves out. No case is skipped silently.

pub mod aggregate;
pub mod archive;
pub mod archive_limits;
pub mod cancel;
pub mod control;
pub mod dequeue;
pub mod enqueue;
pub mod events;
pub mod finish;
pub mod fixture;
pub mod forward;
pub mod inspect;
pub mod janitor;
pub mod leases;
pub mod manage;
pub mod priority;
pub mod progress;
pub mod rate_limit;
pub mod replace;
pub mod scheduler_state;
pub mod servers;
pub mod shards;
pub mod slots;
pub mod stats;
pub mod steps;
pub mod task_metrics;
pub mod uniqueness;
pub mod wait;
pub mod wake;
pub mod workflow;

use asynq_core::Clock;
use asynq_core::broker::{Enqueue, Inspect};
use std::future::Future;
use std::sync::Arc;

/// Makes the brokers the suite runs against.
///
/// [`broker_conformance!`](crate::broker_conformance) evaluates the factory expression once per
/// test, so a factory may own resources that must outlive the broker, such as a `redis-server`
/// process started for the test.
pub trait BrokerFactory {
    /// The broker under test. It implements the traits of the parts the suite runs for it:
    /// [`WorkerBroker`](asynq_core::broker::WorkerBroker) for `worker`,
    /// [`Enqueue`] for `producer`, [`OperatorBroker`](asynq_core::broker::OperatorBroker) for
    /// `manage`, every trait ([`Broker`](asynq_core::Broker)) for `full`.
    type Broker: Clone + Send + Sync + 'static;

    /// Where the cases of the `worker`, `producer` and `manage` parts put tasks and look at them,
    /// since those traits cannot do both: a handle on the broker's store that enqueues and
    /// inspects (the `manage` cases need it to have every trait). A backend with every trait uses
    /// the broker itself.
    type Store: Enqueue + Inspect + Send + Sync + 'static;

    /// A short name for messages, e.g. `"memory"` or `"redis"`.
    fn name(&self) -> &'static str;

    /// The capabilities this backend deliberately lacks; empty for a complete one. Keep it
    /// minimal: every entry leaves cases out for this backend.
    fn lacks(&self) -> &'static [Capability];

    /// A fresh broker holding no queues, tasks or servers, that reads all wall-clock time from
    /// `clock`.
    fn broker(&self, clock: Arc<dyn Clock>) -> impl Future<Output = Self::Broker>;

    /// As [`BrokerFactory::broker`], with every queue's archive trimmed to `limits` instead of
    /// Go asynq's. Only cases of the `full` part call it.
    fn broker_with_archive_limits(
        &self,
        clock: Arc<dyn Clock>,
        limits: asynq_core::ArchiveLimits,
    ) -> impl Future<Output = Self::Broker>;

    /// The [`Store`](BrokerFactory::Store) of `broker`: what its tasks are put in with and read
    /// back from; `broker.clone()` for a backend with every trait.
    fn store(&self, broker: &Self::Broker) -> Self::Store;
}

/// Something a backend may deliberately not support in the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Time-to-live values the broker hands to its store run out by the broker's [`Clock`], so
    /// advancing a simulated clock past a uniqueness lock's TTL releases the lock.
    ///
    /// Redis lacks it: a lock is taken with `SET NX EX <ttl>`, and Redis expires keys by its own
    /// wall clock, so a lock outlives any simulated minute. (Expiries that Go asynq keeps as
    /// sorted-set scores written from the broker's clock, such as leases, completed-task
    /// retention, archive age and server liveness, do follow the simulated clock on Redis and
    /// need no capability.)
    ClockDrivenExpiry,
}

/// Which case needs which capability. [`lacking`] refuses pairs missing from this table, and a
/// test of this crate checks that each is a case of the suite, so it cannot drift.
pub const GATED: &[(&str, Capability)] = &[
    ("case_unique_lock_expires_after_its_ttl", Capability::ClockDrivenExpiry),
    ("case_success_releases_only_a_lock_the_task_still_holds", Capability::ClockDrivenExpiry),
];

/// True when `factory`'s broker lacks `capability`, which `case` needs; the case must then
/// return at once. Says so on stderr, naming the case and the capability.
///
/// ```ignore
/// if lacking(factory, "case_unique_lock_expires_after_its_ttl", Capability::ClockDrivenExpiry) {
///     return;
/// }
/// ```
pub fn lacking<F: BrokerFactory>(factory: &F, case: &str, capability: Capability) -> bool {
    assert!(
        GATED.contains(&(case, capability)),
        "{case} needs {capability:?} but is not listed with it in asynq_conformance::GATED"
    );
    let lacks = factory.lacks().contains(&capability);
    if lacks {
        eprintln!("conformance: {case} NOT RUN: it needs {capability:?}, which the {} broker lacks", factory.name());
    }
    lacks
}

/// Prints the parts and cases run and the capabilities `factory` lacks, with the cases each
/// leaves out, and checks the declaration: no capability listed twice, and every lacked
/// capability is needed by some case (declaring one that nothing needs would be noise).
pub fn check_capabilities<F: BrokerFactory>(factory: &F, parts: &[&str], cases: &[&str]) {
    let lacks = factory.lacks();
    eprintln!(
        "conformance: {} cases of the parts {} run against the {} broker",
        cases.len(),
        parts.join(", "),
        factory.name()
    );
    if lacks.is_empty() {
        eprintln!("conformance: the {} broker lacks no capability; every case of its parts runs", factory.name());
    }
    for (i, capability) in lacks.iter().enumerate() {
        assert!(!lacks[..i].contains(capability), "{capability:?} is declared twice");
        let skipped: Vec<&str> = GATED.iter().filter(|(_, c)| c == capability).map(|(case, _)| *case).collect();
        assert!(!skipped.is_empty(), "{capability:?} is declared as lacking but no case needs it");
        let skipped: Vec<&str> = skipped.into_iter().filter(|case| cases.contains(case)).collect();
        eprintln!("conformance: the {} broker lacks {capability:?}; not run: {}", factory.name(), skipped.join(", "));
    }
}

/// Expands to the conformance suite for one backend: one `#[tokio::test]` per case of its parts,
/// named after the case, plus `capabilities_are_declared`, which prints the parts and what the
/// backend lacks.
///
/// The first argument is an expression making a [`BrokerFactory`]; it is evaluated once per
/// test. `parts = [worker]` (or `[worker, producer, manage, full]`, the default) chooses the parts (see the crate
/// docs). The calling crate needs `tokio` (with the `macros` and `rt-multi-thread` features).
///
/// A backend that does no real IO (an in-process store) adds `paused_time`: every case then runs
/// on tokio's paused clock, so the cases that wait for a wake-up, a timeout or quiet take no
/// real time (`tokio` then also needs `test-util`). A backend over the network leaves it out:
/// paused time would fire timeouts while a reply is still on its way.
///
/// ```ignore
/// asynq_conformance::broker_conformance!(MemoryFactory, paused_time);
/// asynq_conformance::broker_conformance!(WorkerOnlyFactory, parts = [worker], paused_time);
/// ```
#[macro_export]
macro_rules! broker_conformance {
    ($factory:expr) => {
        $crate::broker_conformance!($factory, parts = [worker, producer, manage, full]);
    };
    ($factory:expr, paused_time) => {
        $crate::broker_conformance!($factory, parts = [worker, producer, manage, full], paused_time);
    };
    ($factory:expr, parts = [$($part:ident),+ $(,)?]) => {
        $crate::broker_conformance!(@parts $factory, (flavor = "multi_thread", worker_threads = 2); $($part),+);
    };
    ($factory:expr, parts = [$($part:ident),+ $(,)?], paused_time) => {
        $crate::broker_conformance!(@parts $factory, (start_paused = true); $($part),+);
    };
    (@parts $factory:expr, $runtime:tt; $($part:ident),+) => {
        $($crate::broker_conformance!(@part $part, $factory, $runtime);)+

        #[tokio::test $runtime]
        async fn capabilities_are_declared() {
            let factory = $factory;
            $crate::check_capabilities(&factory, &[$(stringify!($part)),+], &[$($part),+].concat());
        }
    };
    (@part worker, $factory:expr, $runtime:tt) => {
        $crate::broker_conformance!(@suite worker, $factory, $runtime;
            dequeue::case_dequeue_is_first_in_first_out,
            dequeue::case_dequeue_respects_max,
            dequeue::case_dequeue_drains_queues_in_the_given_order,
            dequeue::case_dequeue_skips_a_paused_queue,
            dequeue::case_dequeue_leases_for_thirty_whole_seconds,
            dequeue::case_dequeued_message_equals_the_enqueued_one,
            dequeue::case_dequeue_returns_nothing_when_nothing_is_pending,
            finish::case_done_deletes_and_counts_processed,
            finish::case_complete_keeps_task_and_result_for_the_retention,
            finish::case_retry_as_failure_counts_and_records_the_error,
            finish::case_retry_not_as_failure_counts_nothing,
            finish::case_archive_keeps_retried_and_counts_a_failure,
            finish::case_requeue_goes_to_the_front,
            finish::case_finishing_a_task_that_is_not_active_fails,
            finish::case_finishing_twice_fails,
            finish::case_finish_batch_settles_each_task_as_finish_does,
            finish::case_finish_batch_of_every_outcome_equals_one_by_one,
            finish::case_the_longest_retention_keeps_a_task_that_long,
            finish::case_extreme_task_fields_settle_and_read_back,
            finish::case_a_unique_key_that_is_no_lock_fails_nothing,
            archive::case_archive_trims_tasks_archived_90_days_ago,
            archive::case_archive_keeps_the_newest_9999,
            forward::case_forward_moves_due_tasks_to_pending,
            forward::case_forward_moves_more_than_one_batch,
            forward::case_forward_ignores_pause,
            forward::case_scheduled_task_with_a_group_becomes_plain_pending,
            leases::case_extend_leases_moves_only_active_ids,
            leases::case_list_lease_expired_returns_exactly_the_expired,
            leases::case_lease_stage_is_recorded_and_never_regresses,
            leases::case_dequeue_starting_reports_the_stage_its_leases_record,
            leases::case_a_stall_requeues_uncharged_and_is_counted,
            leases::case_recover_leaves_a_task_leased_again_since_it_was_listed,
            leases::case_recover_settles_only_under_the_lease_it_names,
            janitor::case_janitor_deletes_only_expired_completed_tasks,
            janitor::case_janitor_respects_the_batch_size,
            servers::case_server_state_is_listed_with_its_workers,
            servers::case_server_state_rewrite_replaces_workers,
            servers::case_cleared_server_is_not_listed,
            servers::case_server_state_expires_after_its_ttl,
            servers::case_server_liveness_is_judged_in_whole_seconds,
            servers::case_ping_answers,
            stats::case_daily_counters_follow_the_utc_date,
        );
    };
    (@part producer, $factory:expr, $runtime:tt) => {
        $crate::broker_conformance!(@suite producer, $factory, $runtime;
            enqueue::case_enqueue_pending_task,
            enqueue::case_enqueue_makes_the_queue_known,
            enqueue::case_enqueue_batch_reports_each_task,
            uniqueness::case_duplicate_task_writes_nothing,
            uniqueness::case_unique_lock_is_kept_after_an_id_conflict,
            replace::case_debounce_with_a_taken_id_writes_nothing,
        );
    };
    (@part manage, $factory:expr, $runtime:tt) => {
        $crate::broker_conformance!(@suite manage, $factory, $runtime;
            manage::case_run_task_makes_a_task_pending_from_every_runnable_state,
            manage::case_a_task_run_by_an_operator_has_no_pending_time,
            manage::case_run_task_refuses_active_and_pending_tasks,
            manage::case_archive_task_archives_every_state_but_active,
            manage::case_archive_task_refuses_active_and_archived_tasks,
            manage::case_delete_task_deletes_every_state_but_active,
            manage::case_single_task_actions_refuse_a_missing_task,
            manage::case_every_action_refuses_an_unknown_queue,
            manage::case_run_all_makes_every_task_of_a_state_pending,
            manage::case_archive_all_archives_every_task_of_a_state,
            manage::case_bulk_action_reports_its_progress,
            manage::case_delete_all_deletes_every_task_of_a_state,
            manage::case_bulk_actions_on_a_group_empty_it,
            manage::case_bulk_actions_refuse_sets_they_do_not_apply_to,
            manage::case_deletes_release_the_unique_lock,
            manage::case_archive_and_run_keep_the_unique_lock,
            manage::case_update_task_payload_changes_only_a_scheduled_task,
            manage::case_delete_queue_refuses_a_queue_with_tasks,
            manage::case_delete_queue_with_force_deletes_its_tasks,
            manage::case_delete_queue_with_force_releases_unique_locks,
            manage::case_delete_queue_with_force_refuses_active_tasks,
            manage::case_list_group_tasks_pages_a_group_oldest_first,
            manage::case_history_counts_each_utc_day_today_first,
            manage::case_queue_info_estimates_memory_usage,
            manage::case_running_tasks_wakes_a_waiting_worker,
        );
    };
    (@part full, $factory:expr, $runtime:tt) => {
        $crate::broker_conformance!(@suite full, $factory, $runtime;
            aggregate::case_groups_are_listed_by_name_with_their_sizes,
            aggregate::case_an_empty_group_is_never_aggregated,
            aggregate::case_grace_period_aggregates_an_idle_group,
            aggregate::case_max_size_takes_the_oldest_tasks_first,
            aggregate::case_max_delay_aggregates_a_busy_group,
            aggregate::case_aggregation_check_refuses_invalid_input,
            aggregate::case_complete_aggregation_enqueues_and_deletes_the_members,
            aggregate::case_refused_completion_keeps_the_set,
            aggregate::case_completing_keeps_the_members_uniqueness_locks,
            aggregate::case_delete_aggregation_set_deletes_its_members,
            aggregate::case_stale_sets_are_reclaimed_into_their_group,
            aggregate::case_ready_groups_names_the_groups_each_rule_makes_ready,
            enqueue::case_enqueue_scheduled_task,
            enqueue::case_enqueue_grouped_task,
            enqueue::case_task_id_conflict_writes_nothing,
            enqueue::case_task_id_conflicts_with_a_task_in_any_state,
            enqueue::case_enqueue_batch_of_every_placement_equals_one_by_one,
            priority::case_higher_priorities_run_first_and_fifo_within_one,
            priority::case_priorities_order_tasks_within_a_queue_only,
            priority::case_prioritized_tasks_are_listed_and_counted_as_pending,
            priority::case_a_task_keeps_its_priority_through_scheduling_retries_and_requeues,
            priority::case_a_recovered_task_keeps_its_priority,
            priority::case_operators_act_on_prioritized_tasks,
            priority::case_priority_with_unique_debounced_replaced_and_grouped_tasks,
            priority::case_enqueue_batch_keeps_priorities,
            priority::case_a_prioritized_task_wakes_a_waiting_worker,
            progress::case_progress_of_a_running_task_is_shown_and_kept_when_it_completes,
            progress::case_progress_is_refused_for_a_task_that_is_not_running,
            progress::case_a_new_attempt_starts_without_progress,
            replace::case_debounce_keeps_the_last_task_of_a_burst,
            replace::case_debounce_replaces_only_a_scheduled_task_of_its_key_and_queue,
            replace::case_debounce_replaces_only_a_task_debounced_with_its_key,
            replace::case_replace_by_id_moves_a_waiting_task,
            replace::case_replace_refuses_what_is_not_waiting,
            replace::case_a_started_task_is_never_replaced,
            archive_limits::case_configured_archive_limits_trim_by_size_and_age,
            archive_limits::case_the_archive_outlook_counts_what_a_bulk_archive_drops,
            archive_limits::case_a_bulk_archive_reports_what_its_trim_dropped,
            slots::case_slots_admit_up_to_the_limit,
            slots::case_a_slot_comes_back_when_its_hold_expires,
            slots::case_a_released_slot_wakes_a_waiter,
            task_metrics::case_task_metrics_add_up_per_type_and_bucket,
            task_metrics::case_task_metrics_keep_a_bounded_number_of_types,
            task_metrics::case_bad_task_metrics_write_nothing,
            steps::case_step_records_are_kept_through_retries,
            steps::case_step_records_are_refused_for_a_task_that_is_not_running,
            steps::case_step_records_go_with_their_task,
            steps::case_a_parked_task_is_scheduled_uncharged_and_shows_why,
            steps::case_a_signal_is_kept_and_wakes_a_task_waiting_for_it,
            steps::case_step_records_go_when_the_archive_trims_their_task,
            steps::case_a_parked_grouped_task_resumes_as_pending_not_in_its_group,
            workflow::case_a_chain_runs_each_task_after_the_one_before,
            workflow::case_a_chord_callback_waits_for_every_member,
            workflow::case_a_failure_cancels_down_the_workflow_unless_a_task_runs_anyway,
            workflow::case_dependents_in_other_queues_and_large_fan_outs_are_released,
            workflow::case_settles_are_relayed_when_wanted_without_the_periodic_relay,
            workflow::case_a_recovered_parent_passes_its_outcome_on,
            workflow::case_a_taken_task_id_stores_nothing,
            workflow::case_a_parent_an_operator_settles_passes_its_outcome_on,
            workflow::case_workflows_are_kept_for_operators,
            workflow::case_a_cancelled_waiting_task_is_archived_and_fails_what_waits_for_it,
            workflow::case_a_signal_to_a_waiting_task_is_kept_for_when_it_runs,
            workflow::case_a_cancel_mark_is_kept_and_reported,
            workflow::case_a_dag_s_names_are_kept_in_its_record,
            workflow::case_operators_see_how_gone_workflow_tasks_settled,
            workflow::case_a_parent_removed_with_its_queue_vanishes,
            events::case_events_are_kept_only_for_a_queue_that_asks,
            events::case_events_follow_each_task_through_its_life,
            events::case_event_reads_resume_and_report_what_was_trimmed,
            events::case_a_log_keeps_exactly_its_cap_and_a_read_of_nothing_reads_nothing,
            events::case_steps_parks_and_signals_are_logged,
            rate_limit::case_rate_bucket_refills_at_the_rate,
            rate_limit::case_rate_bucket_caps_at_the_burst,
            rate_limit::case_rate_bucket_is_shared_by_every_handle,
            rate_limit::case_rate_bucket_ignores_a_clock_running_behind,
            forward::case_forward_tells_when_the_next_task_falls_due_and_notices_name_new_ones,
            inspect::case_queue_info_counts_every_state,
            inspect::case_queue_latency_is_the_age_of_the_next_pending_task,
            inspect::case_unknown_queue_is_not_found,
            inspect::case_the_queue_directory_counts_and_lists_registered_queues,
            inspect::case_task_info_next_process_time_by_state,
            inspect::case_list_pending_and_active_in_processing_order,
            inspect::case_list_sorted_states_by_score,
            inspect::case_list_aggregating_tasks,
            inspect::case_active_task_past_its_lease_is_orphaned,
            inspect::case_pause_twice_or_unpause_running_fails,
            inspect::case_pausing_does_not_make_a_queue_known,
            control::case_server_request_is_taken_once,
            control::case_server_request_for_no_live_server_is_refused,
            control::case_server_stop_request_is_never_weakened,
            control::case_server_request_expires_after_the_server_record,
            shards::case_sharded_queue_declaration_is_kept,
            shards::case_sharded_queue_refusals_write_nothing,
            shards::case_sharded_queue_reshard_keeps_the_old_generation_until_drained,
            shards::case_sharded_queue_reshard_refusals_write_nothing,
            shards::case_a_stray_of_a_dropped_generation_is_removed_once_run,
            scheduler_state::case_scheduler_entries_are_listed_as_written,
            scheduler_state::case_scheduler_entries_rewrite_replaces_them,
            scheduler_state::case_cleared_scheduler_entries_are_not_listed,
            scheduler_state::case_scheduler_entries_expire_after_their_ttl,
            scheduler_state::case_enqueue_history_is_newest_first_and_paged,
            scheduler_state::case_enqueue_history_keeps_the_newest_1000,
            scheduler_state::case_cleared_enqueue_history_is_empty,
            scheduler_state::case_fire_marks_last_for_their_ttl,
            uniqueness::case_scheduled_and_grouped_unique_tasks_hold_the_lock,
            uniqueness::case_unique_lock_released_on_success,
            uniqueness::case_unique_lock_kept_until_success,
            uniqueness::case_dequeued_unique_task_carries_its_lock_key,
            uniqueness::case_unique_lock_expires_after_its_ttl,
            uniqueness::case_success_releases_only_a_lock_the_task_still_holds,
            wake::case_enqueue_wakes_a_waiting_worker,
            wake::case_a_worker_that_fetched_short_is_woken_by_the_next_enqueue,
            wake::case_waiting_on_a_queue_with_pending_work_returns_at_once,
            wake::case_forward_and_requeue_wake_a_waiting_worker,
            wake::case_a_paused_queue_wakes_no_one_until_unpaused,
            cancel::case_cancellations_reach_every_subscriber,
            cancel::case_a_dropped_subscription_leaves_the_others_listening,
            cancel::case_a_request_is_kept_until_settled_or_expired,
            cancel::case_a_request_reports_what_it_found,
            wait::case_wait_reports_a_completed_task_with_its_result,
            wait::case_wait_reports_an_archived_task_with_its_error,
            wait::case_wait_reports_a_task_done_without_retention_as_deleted,
            wait::case_finish_batch_tells_every_waiter,
            wait::case_wait_goes_on_through_retries,
            wait::case_wait_returns_at_once_for_a_finished_task,
            wait::case_wait_times_out_with_a_typed_error,
            wait::case_wait_refuses_bad_arguments_and_unknown_queues,
        );
    };
    (@part $other:ident, $factory:expr, $runtime:tt) => {
        compile_error!(concat!(
            "asynq_conformance: no part `", stringify!($other), "`; the parts are `worker`, `producer`, `manage` and `full`"
        ));
    };
    (@suite $part:ident, $factory:expr, $runtime:tt; $($module:ident :: $case:ident),+ $(,)?) => {
        $(
            #[tokio::test $runtime]
            async fn $case() {
                let factory = $factory;
                $crate::$module::$case(&factory).await;
            }
        )+

        /// The cases of this part, for `capabilities_are_declared`.
        #[allow(non_upper_case_globals)]
        const $part: &[&str] = &[$(stringify!($case)),+];
    };
}
