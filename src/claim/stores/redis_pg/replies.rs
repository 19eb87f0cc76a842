//! Reading Redis replies: text, integers, arrays, hashes and stream entries, each refused
//! as a damaged store when it is not what the script returns.

use std::collections::HashMap;

use redis::Value;

use crate::claim::error::{ClaimError, StoreError};

pub(super) fn bad_reply(what: &str, v: &Value) -> ClaimError {
    ClaimError::store(format!("redis: unexpected reply for {what}: {v:?}"))
}

pub(super) fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Okay => Some("OK".into()),
        _ => None,
    }
}

pub(super) fn as_array<'a>(what: &str, v: &'a Value) -> Result<&'a [Value], ClaimError> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(&[]),
        other => Err(bad_reply(what, other)),
    }
}

pub(super) fn as_int(what: &str, v: &Value) -> Result<i64, ClaimError> {
    match v {
        Value::Int(i) => Ok(*i),
        other => as_text(other).and_then(|s| s.parse().ok()).ok_or_else(|| bad_reply(what, other)),
    }
}

/// A flat `[field, value, ...]` reply as a map.
pub(super) fn pairs(what: &str, v: &Value) -> Result<HashMap<String, String>, ClaimError> {
    let items = as_array(what, v)?;
    let mut out = HashMap::with_capacity(items.len() / 2);
    for kv in items.chunks(2) {
        match kv {
            [k, val] => {
                let k = as_text(k).ok_or_else(|| bad_reply(what, v))?;
                let val = as_text(val).ok_or_else(|| bad_reply(what, v))?;
                out.insert(k, val);
            }
            _ => return Err(bad_reply(what, v)),
        }
    }
    Ok(out)
}

/// A stream entry: its id and its fields.
pub(super) type Entry = (String, HashMap<String, String>);

/// An XRANGE reply.
pub(super) fn stream_entries(what: &str, v: &Value) -> Result<Vec<Entry>, ClaimError> {
    as_array(what, v)?
        .iter()
        .map(|e| match as_array(what, e)? {
            [id, fields] => Ok((as_text(id).ok_or_else(|| bad_reply(what, e))?, pairs(what, fields)?)),
            _ => Err(bad_reply(what, e)),
        })
        .collect()
}

pub(super) fn parse_u64(what: &str, s: &str) -> Result<u64, ClaimError> {
    s.parse().map_err(|e| StoreError::new(format!("redis: {what} {s:?} is not a number")).with_source(e).into())
}
