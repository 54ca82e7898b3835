//! The handlers of docs/spec.md §7, one file per group of endpoints, each with the
//! JSON shapes only it uses. [`routes`] lists them all with their OpenAPI
//! descriptions, so the router and the document cannot disagree.

use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

mod claim;
mod enqueue;
pub use enqueue::{batch_tasks, BatchError};
pub(crate) mod groups;
mod lease;
pub(crate) mod lease_wait;
mod list;
mod queues;
mod schedules;
mod settings;
mod system;
pub(crate) use system::ApiDocument;
mod tasks;
pub(crate) mod token;

/// Schemas that appear only inside query parameters are not collected from
/// the handlers: listed here so every `$ref` of the document resolves.
#[derive(OpenApi)]
#[openapi(components(schemas(list::OrderName)))]
struct QuerySchemas;

/// Every route, documented.
pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(QuerySchemas::openapi())
        .routes(routes!(enqueue::enqueue, list::list))
        .routes(routes!(claim::claim))
        .routes(routes!(lease::ack))
        .routes(routes!(lease::fail))
        .routes(routes!(lease::release))
        .routes(routes!(lease::extend))
        .routes(routes!(lease::snooze))
        .routes(routes!(lease::ack_many))
        .routes(routes!(lease_wait::wait))
        .routes(routes!(
            tasks::get_by_id,
            tasks::update_by_id,
            tasks::cancel_by_id
        ))
        .routes(routes!(
            tasks::get_by_key,
            tasks::update_by_key,
            tasks::cancel_by_key
        ))
        .routes(routes!(tasks::retry))
        .routes(routes!(queues::overview))
        .routes(routes!(groups::groups))
        .routes(routes!(settings::get_settings, settings::put_settings))
        .routes(routes!(queues::pause))
        .routes(routes!(queues::resume))
        .routes(routes!(queues::retry_dead))
        .routes(routes!(schedules::list_schedules))
        .routes(routes!(schedules::put_schedule, schedules::delete_schedule))
        .routes(routes!(schedules::fire_schedule))
        .routes(routes!(system::healthz))
        .routes(routes!(system::time))
        .routes(routes!(system::metrics))
        .routes(routes!(system::openapi))
}
