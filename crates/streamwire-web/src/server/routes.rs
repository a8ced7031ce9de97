//! The relay's HTTP routes: `/` (the viewer page, or with an upgrade a rosbridge
//! websocket), `/stats` (per topic and per client counts as JSON), and `/foxglove` when
//! the Foxglove protocol is served (`crate::foxglove::connect`); and the answers to a
//! request refused for its token or its origin (401, 403), counted and logged once per
//! burst.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::session::{Dialect, accept_client};
use super::shared::{Shared, lock};
use crate::access::{Denied, more_since};
use crate::foxglove;
use crate::listener::Connection;
use crate::rosbridge;

/// The viewer page: one file, no external downloads.
const VIEWER: &str = include_str!("../viewer.html");

/// The relay's routes, served with `shared`.
pub(super) fn router(shared: &Arc<Shared>) -> Router {
    let mut router = Router::new()
        .route("/", get(root))
        .route("/stats", get(stats));
    if shared.foxglove.is_some() {
        router = router.route(foxglove::PATH, get(foxglove::connect));
    }
    router.with_state(shared.clone())
}

#[derive(serde::Deserialize)]
struct ConnectQuery {
    token: Option<String>,
    client: Option<String>,
}

/// `/`: the viewer page, or (with an upgrade) a rosbridge websocket. Both need the token;
/// the websocket also an allowed origin (or none: not a browser).
async fn root(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<ConnectQuery>,
    headers: HeaderMap,
    connection: Option<Extension<Arc<Connection>>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let token = query.token.as_deref();
    match authorized_upgrade(&shared, token, &headers, connection.as_ref(), upgrade) {
        Err(denied) => shared.refuse(denied),
        Ok(None) => Html(VIEWER).into_response(),
        Ok(Some(upgrade)) => {
            let dialect = Dialect::Rosbridge(rosbridge::Session);
            accept_client(shared, connection, upgrade, query.client, dialect)
        }
    }
}

/// The token check of every route: refused (answered with [`Shared::refuse`]), or the
/// request's connection counted as one that presented the token (from then on never
/// evicted for a newcomer, nor closed at `token_timeout`).
pub(crate) fn authorize(
    shared: &Shared,
    token: Option<&str>,
    headers: &HeaderMap,
    connection: Option<&Extension<Arc<Connection>>>,
) -> Result<(), Denied> {
    shared.access.check_token(token, headers)?;
    if let Some(Extension(connection)) = connection {
        connection.place.authenticate();
    }
    Ok(())
}

/// A websocket route's checks: the token ([`authorize`]), then for an upgrade its
/// origin. `Ok(None)`: a plain request, no upgrade asked.
pub(crate) fn authorized_upgrade(
    shared: &Shared,
    token: Option<&str>,
    headers: &HeaderMap,
    connection: Option<&Extension<Arc<Connection>>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Option<WebSocketUpgrade>, Denied> {
    authorize(shared, token, headers, connection)?;
    let Ok(upgrade) = upgrade else {
        return Ok(None);
    };
    shared.access.check_origin(headers)?;
    Ok(Some(upgrade))
}

#[derive(serde::Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// `/stats`: per topic and per client counts (with the token).
async fn stats(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<TokenQuery>,
    headers: HeaderMap,
    connection: Option<Extension<Arc<Connection>>>,
) -> Response {
    let token = query.token.as_deref();
    if let Err(denied) = authorize(&shared, token, &headers, connection.as_ref()) {
        return shared.refuse(denied);
    }
    let (authenticated, unauthenticated) = lock(&shared.connections).counts();
    let body = json!({
        "topics": topic_stats(&shared),
        "clients": client_stats(&shared),
        "totals": totals(&shared),
        "connections": {
            "open": authenticated + unauthenticated,
            "authenticated": authenticated,
            "unauthenticated": unauthenticated,
            "max": shared.connection_cap,
        },
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Each topic's messages, bytes and subscribers (0 while no feed runs).
fn topic_stats(shared: &Shared) -> Vec<serde_json::Value> {
    let feeds = lock(&shared.feeds).clone();
    shared
        .topics
        .iter()
        .map(|t| {
            let feed = feeds.get(&t.name);
            json!({
                "topic": format!("/{}", t.name),
                "type": t.ros_type,
                "messages": feed.map_or(0, |f| f.messages.load(Ordering::Relaxed)),
                "bytes": feed.map_or(0, |f| f.bytes.load(Ordering::Relaxed)),
                "subscribers": feed.map_or(0, |f| lock(&f.subscribers).len()),
            })
        })
        .collect()
}

/// Each client's counts, and its drops per topic.
fn client_stats(shared: &Shared) -> Vec<serde_json::Value> {
    lock(&shared.clients)
        .iter()
        .map(|c| {
            let topics: Vec<_> = lock(&c.topics)
                .iter()
                .map(|t| json!({"topic": t.spelling, "dropped": t.slot.dropped.load(Ordering::Relaxed)}))
                .collect();
            json!({
                "id": c.id,
                "name": c.name,
                "dropped": c.dropped.load(Ordering::Relaxed),
                "sent": c.sent.load(Ordering::Relaxed),
                "bad_input": c.bad_input.load(Ordering::Relaxed),
                "replies_dropped": c.replies_dropped.load(Ordering::Relaxed),
                "topics": topics,
            })
        })
        .collect()
}

/// The relay's counters since it started.
fn totals(shared: &Shared) -> serde_json::Value {
    let c = &shared.counters;
    json!({
        "clients": c.clients.get(),
        "refused_clients": c.refused.get(),
        "refused_token": c.refused_token.get(),
        "refused_origin": c.refused_origin.get(),
        "refused_connections": c.refused_connections.get(),
        "evicted_connections": c.evicted_connections.get(),
        "token_timeouts": c.token_timeouts.get(),
        "accept_errors": c.accept_errors.get(),
        "header_timeouts": c.header_timeouts.get(),
        "handshake_timeouts": c.handshake_timeouts.get(),
        "idle_disconnects": c.idle.get(),
        "replies_dropped": c.replies_dropped.get(),
        "dropped": c.dropped.get(),
        "stalled_disconnects": c.stalled.get(),
        "bad_input": c.bad_input.get(),
        "frames_sent": c.frames_sent.get(),
        "bytes_sent": c.bytes_sent.get(),
        "commands": c.commands.get(),
    })
}

impl Shared {
    /// The answer to a refused request (401 or 403, saying why), counted and logged once
    /// per burst.
    pub(crate) fn refuse(&self, denied: Denied) -> Response {
        match denied {
            Denied::MissingToken | Denied::WrongToken => self.refuse_token(&denied),
            Denied::ForeignOrigin(origin) => self.refuse_origin(&origin),
        }
    }

    /// 401: no token, or a wrong one.
    fn refuse_token(&self, denied: &Denied) -> Response {
        self.counters.refused_token.increment();
        let missing = *denied == Denied::MissingToken;
        let why = if missing {
            "this relay asks for its token: open the URL the run printed \
             (http://HOST:PORT/?token=...), or give it as `?token=` or \
             `Authorization: Bearer`"
        } else {
            "wrong token: open the URL the run printed (http://HOST:PORT/?token=...)"
        };
        if let Some(unsaid) = self.logs.refused_token.note() {
            tracing::warn!(
                "web relay: refused a request: {}{}",
                if missing { "no token" } else { "wrong token" },
                more_since(unsaid)
            );
        }
        let mut response = (StatusCode::UNAUTHORIZED, format!("{why}\n")).into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"streamwire\""),
        );
        response
    }

    /// 403: a websocket from a page of a foreign `origin`.
    fn refuse_origin(&self, origin: &str) -> Response {
        self.counters.refused_origin.increment();
        if let Some(unsaid) = self.logs.refused_origin.note() {
            tracing::warn!(
                "web relay: refused a websocket from a page of `{origin}` (allowed: {}; \
                 add it with the relay's `allowed_origins`, `-o web.allowed_origins=...`){}",
                self.access.origins().join(", "),
                more_since(unsaid)
            );
        }
        let why = format!(
            "pages of `{origin}` may not connect: allow the origin with the relay's \
             `allowed_origins` setting\n"
        );
        (StatusCode::FORBIDDEN, why).into_response()
    }
}
