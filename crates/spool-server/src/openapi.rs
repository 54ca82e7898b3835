//! The OpenAPI document, made from the handlers' annotations as the router
//! collected them with its routes (the router hands them in, so this module
//! knows no handler), so it describes what the router really serves. Added
//! here: the title, tags and security scheme, and the error answers common
//! to every operation (auth, limits, store down) rather than repeated on
//! each handler.

use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi as Doc, Ref, ResponseBuilder};
use utoipa::OpenApi;

use crate::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Spool",
        description = "A durable task queue. Errors are {\"error\": {\"code\", \"message\"}}; \
                       timestamps are RFC 3339 UTC with milliseconds; durations are *_ms integers."
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    security(("bearer" = [])),
    tags(
        (name = "tasks", description = "Enqueue, inspect, change and cancel tasks"),
        (name = "leases", description = "Claim tasks and report on them"),
        (name = "queues", description = "Queues, their settings and counts"),
        (name = "schedules", description = "Periodic schedules: one task per tick"),
        (name = "system", description = "Health, clock, metrics, this document"),
    )
)]
struct ApiDoc;

/// The whole document, from what the routes' annotations describe.
pub(crate) fn document(routes: Doc) -> Doc {
    let mut doc = ApiDoc::openapi();
    doc.merge(routes);
    add_security_scheme(&mut doc);
    add_common_errors(&mut doc);
    doc
}

fn add_security_scheme(doc: &mut Doc) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
    );
}

fn error(description: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            utoipa::openapi::ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

fn add_common_errors(doc: &mut Doc) {
    for (path, item) in doc.paths.paths.iter_mut() {
        let open = path == crate::auth::OPEN_PATH;
        let ops = [
            ("get", item.get.as_mut()),
            ("put", item.put.as_mut()),
            ("post", item.post.as_mut()),
            ("delete", item.delete.as_mut()),
            ("patch", item.patch.as_mut()),
        ];
        for (method, op) in ops {
            if let Some(op) = op {
                add_errors(op, path, method, open);
            }
        }
    }
}

fn add_errors(op: &mut Operation, path: &str, method: &str, open: bool) {
    let mut add = |status: &str, what: &str| {
        op.responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| error(what).into());
    };
    let has_input = path.contains('{') || op.request_body.is_some() || op.parameters.is_some();
    if has_input {
        add("400", "bad_request: malformed path, query or body");
    }
    if !open {
        add("401", "unauthorized: missing or wrong bearer token");
    }
    if path.contains('{') {
        add("404", "not_found: no such task or queue");
    }
    let leased = path.starts_with("/v1/tasks/{id}/") || path == "/v1/ack";
    if (leased && method == "post" && !path.ends_with("/retry")) || method == "patch" {
        add(
            "409",
            "lease_lost (wrong or stale token) or lease_held (task is leased)",
        );
    }
    if op.request_body.is_some() {
        add(
            "413",
            "payload_too_large: body over the limit, or payload over max_payload",
        );
        add(
            "415",
            "unsupported_media_type: the body is not application/json",
        );
    }
    if !open {
        add("429", "overloaded: too many requests in progress");
    }
    add(
        "503",
        "unavailable: the store is down or did not answer in time",
    );
    add("default", "Any other error, same shape");
}
