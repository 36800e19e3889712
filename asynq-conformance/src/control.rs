//! Operators' requests to quiet or stop a server: kept for a live server only, taken once by its
//! heartbeat, a stop never weakened to a quiet, and gone a grace period after the server's
//! record would have expired. Expiry follows the broker's clock (the expiry is kept beside the
//! request), so it needs no capability.

use super::BrokerFactory;
use super::fixture::{Fixture, at, millis, secs};
use super::servers::server;
use asynq_core::broker::ServerControl;
use asynq_core::broker::ServerState;
use asynq_core::control::SERVER_REQUEST_GRACE;
use asynq_core::{Broker, Error, ServerRequest};
use std::sync::Arc;
use std::time::Duration;

/// The heartbeat TTL the cases use (Go's: twice the 5-second heartbeat).
const TTL: Duration = Duration::from_secs(10);

/// The broker's server control, which the memory and Redis brokers have.
fn control<B: Broker + Clone>(t: &Fixture<B>) -> Arc<dyn ServerControl> {
    Arc::new(t.broker.clone()).as_server_control().expect("the broker carries server requests")
}

/// A request for a live server is taken by that server once, and by no other.
pub async fn case_server_request_is_taken_once<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let control = control(&t);
    let (a, b) = (server("a", 1), server("b", 2));
    t.broker.write_server_state(&a, &[], TTL).await.unwrap();
    t.broker.write_server_state(&b, &[], TTL).await.unwrap();

    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    control.request_server(&b.server_id, ServerRequest::Stop).await.unwrap();

    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), Some(ServerRequest::Quiet));
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), None, "taken once");
    assert_eq!(control.take_server_request(&b.server_id).await.unwrap(), Some(ServerRequest::Stop));
    assert_eq!(control.take_server_request("nobody").await.unwrap(), None);
}

/// A request names a live server: an unknown, cleared or expired server, or a malformed ID, is
/// refused with a typed error, and nothing is kept for it.
pub async fn case_server_request_for_no_live_server_is_refused<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let control = control(&t);
    let (gone, cleared) = (server("gone", 1), server("cleared", 2));
    t.broker.write_server_state(&gone, &[], TTL).await.unwrap();
    t.broker.write_server_state(&cleared, &[], TTL).await.unwrap();
    t.broker.clear_server_state(&cleared).await.unwrap();
    t.set(at(11));

    for id in ["nobody", gone.server_id.as_str(), cleared.server_id.as_str()] {
        match control.request_server(id, ServerRequest::Stop).await {
            Err(Error::ServerNotFound { id: named }) => assert_eq!(named, id),
            other => panic!("a request for {id:?}: expected ServerNotFound, got {other:?}"),
        }
        assert_eq!(control.take_server_request(id).await.unwrap(), None, "nothing kept for {id:?}");
    }
    for id in ["", "  ", "bad\nid", &"x".repeat(257)] {
        match control.request_server(id, ServerRequest::Quiet).await {
            Err(Error::InvalidArgument { field: "server ID", .. }) => {}
            other => panic!("a request for {id:?}: expected InvalidArgument, got {other:?}"),
        }
    }
}

/// A stop kept before stays a stop when a quiet is asked after it; a stop replaces a quiet.
pub async fn case_server_stop_request_is_never_weakened<F: BrokerFactory<Broker: asynq_core::Broker>>(factory: &F) {
    let t = Fixture::new(factory).await;
    let control = control(&t);
    let a = server("a", 1);
    t.broker.write_server_state(&a, &[], TTL).await.unwrap();

    control.request_server(&a.server_id, ServerRequest::Stop).await.unwrap();
    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), Some(ServerRequest::Stop));

    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    control.request_server(&a.server_id, ServerRequest::Stop).await.unwrap();
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), Some(ServerRequest::Stop));

    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), Some(ServerRequest::Quiet));
}

/// A request nobody takes is kept until [`SERVER_REQUEST_GRACE`] after the server's record
/// expires (in whole seconds, as server liveness is judged), then is gone; an expired stop no
/// longer makes a later quiet a stop.
pub async fn case_server_request_expires_after_the_server_record<F: BrokerFactory<Broker: asynq_core::Broker>>(
    factory: &F,
) {
    let t = Fixture::new(factory).await;
    let control = control(&t);
    let a = server("a", 1);
    let grace = SERVER_REQUEST_GRACE.as_secs() as i64;
    t.set(at(0) + millis(500));
    t.broker.write_server_state(&a, &[], TTL).await.unwrap(); // record alive through second 10
    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    t.set(at(10 + grace) + millis(900));
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), Some(ServerRequest::Quiet));

    t.set(at(0));
    control.request_server(&a.server_id, ServerRequest::Stop).await.unwrap();
    t.set(at(11 + grace));
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), None, "expired");

    // A stop that expired unread does not turn a later quiet into a stop.
    t.set(at(0));
    control.request_server(&a.server_id, ServerRequest::Stop).await.unwrap();
    t.set(at(11 + grace));
    t.broker.write_server_state(&a, &[], TTL).await.unwrap();
    control.request_server(&a.server_id, ServerRequest::Quiet).await.unwrap();
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), Some(ServerRequest::Quiet));
    t.advance(secs(1));
    assert_eq!(control.take_server_request(&a.server_id).await.unwrap(), None);
}
