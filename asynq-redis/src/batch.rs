//! Pipelines of script calls that settle many items at once: how `enqueue_batch` and
//! `finish_batch` reach Redis in one round trip per queue.

use crate::connection::Connection;
use crate::error::{broker_error, unexpected};
use crate::scripts::ScriptCall;
use asynq_core::{Result, StoredTask};
use redis::{FromRedisValue, Value};

/// One call of a pipeline and the items its reply answers for: a script that returns an
/// integer answers for one item, one that returns an array for each of its items in order.
pub(crate) struct BatchCall {
    pub(crate) call: ScriptCall,
    pub(crate) context: &'static str,
    pub(crate) items: Vec<(usize, StoredTask)>,
}

/// Runs `calls` as one pipeline and returns every item with its reply code, or the error that
/// kept its call from running. A call whose script Redis lost (a restart, a failover) is run
/// again on its own, loading the script.
pub(crate) async fn run_pipeline(
    conn: &mut Connection,
    calls: Vec<BatchCall>,
) -> Vec<(usize, StoredTask, Result<i64>)> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for batch in &calls {
        pipe.add_command(batch.call.cmd());
    }
    let mut answered = Vec::with_capacity(calls.iter().map(|c| c.items.len()).sum());
    let replies: Vec<Value> = match pipe.query_async(conn).await {
        Ok(replies) => replies,
        Err(e) => {
            let e = broker_error("batch", e);
            for batch in calls {
                answered.extend(batch.items.into_iter().map(|(index, msg)| (index, msg, Err(e.duplicate()))));
            }
            return answered;
        }
    };
    for (batch, reply) in calls.into_iter().zip(replies) {
        let reply = match reply {
            Value::ServerError(e) if e.kind() == Some(redis::ServerErrorKind::NoScript) => {
                batch.call.run::<Value>(conn, batch.context).await
            }
            other => Ok(other),
        };
        let codes: Result<Vec<i64>> = match reply {
            Ok(Value::Int(n)) => Ok(vec![n]),
            Ok(Value::Array(values)) => {
                values.iter().map(|v| i64::from_redis_value_ref(v).map_err(|e| unexpected(batch.context, e))).collect()
            }
            Ok(other) => Err(unexpected(batch.context, format!("unexpected reply {other:?}"))),
            Err(e) => Err(e),
        };
        match codes {
            Ok(codes) if codes.len() == batch.items.len() => {
                answered.extend(batch.items.into_iter().zip(codes).map(|((index, msg), code)| (index, msg, Ok(code))));
            }
            Ok(codes) => {
                let e = unexpected(batch.context, format!("{} replies for {} items", codes.len(), batch.items.len()));
                answered.extend(batch.items.into_iter().map(|(index, msg)| (index, msg, Err(e.duplicate()))));
            }
            Err(e) => answered.extend(batch.items.into_iter().map(|(index, msg)| (index, msg, Err(e.duplicate())))),
        }
    }
    answered
}
