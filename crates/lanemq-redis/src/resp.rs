//! RESP2 on a `RedisWire`: requests written as arrays of bulk strings (`array`, `bulk`), and
//! replies: where one ends in the bytes read so far (`frame`), and the value it holds
//! (`decode`).

use redis::{RedisResult, Value};

/// Starts a request of `len` arguments; each follows as a `bulk`.
pub(crate) fn array(out: &mut Vec<u8>, len: usize) {
    out.push(b'*');
    out.extend_from_slice(len.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// One argument of a request.
pub(crate) fn bulk(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(arg.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

/// The length of the first whole RESP2 reply in `bytes`, `None` while it is incomplete.
pub(crate) fn frame(bytes: &[u8]) -> Result<Option<usize>, String> {
    reply_end(bytes, 0)
}

fn reply_end(bytes: &[u8], start: usize) -> Result<Option<usize>, String> {
    let Some(&kind) = bytes.get(start) else {
        return Ok(None);
    };
    let Some(line) = bytes[start..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line_end = start + line;
    let after_line = line_end + 2;
    let count = || -> Result<i64, String> {
        std::str::from_utf8(&bytes[start + 1..line_end])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("bad RESP length after {:?}", kind as char))
    };
    match kind {
        b'+' | b'-' | b':' => Ok(Some(after_line)),
        b'$' => {
            let len = count()?;
            if len < 0 {
                return Ok(Some(after_line));
            }
            let end = after_line + len as usize + 2;
            Ok((bytes.len() >= end).then_some(end))
        }
        b'*' => {
            let len = count()?;
            let mut at = after_line;
            for _ in 0..len.max(0) {
                match reply_end(bytes, at)? {
                    Some(end) => at = end,
                    None => return Ok(None),
                }
            }
            Ok(Some(at))
        }
        other => Err(format!("unexpected RESP type byte {other:#04x}")),
    }
}

/// The value of one whole reply (`frame` found its end). Replies holding jobs (a claim's, an
/// add_bulk's) are large, and redis-rs's combinator parser took a large share of the loop
/// thread's time per added job (perf; benches/history/5-10.md). Rare error replies go to redis-rs,
/// which makes its `ServerError`s.
pub(crate) fn decode(bytes: &[u8]) -> RedisResult<Value> {
    let mut at = 0;
    match value(bytes, &mut at) {
        Some(v) if at == bytes.len() => Ok(v),
        _ => redis::parse_redis_value(bytes),
    }
}

/// The value starting at `*at`, moving `*at` past it; `None` for an error reply or bytes that
/// are not a whole reply.
fn value(bytes: &[u8], at: &mut usize) -> Option<Value> {
    let kind = *bytes.get(*at)?;
    let start = *at + 1;
    let line = &bytes[start..start + bytes.get(start..)?.iter().position(|&b| b == b'\r')?];
    *at = start + line.len() + 2;
    match kind {
        b'+' if line == b"OK" => Some(Value::Okay),
        b'+' => Some(Value::SimpleString(
            std::str::from_utf8(line).ok()?.to_owned(),
        )),
        b':' => Some(Value::Int(number(line)?)),
        b'$' => {
            let Ok(len) = usize::try_from(number(line)?) else {
                return Some(Value::Nil);
            };
            let body = bytes.get(*at..*at + len)?.to_vec();
            *at += len + 2;
            Some(Value::BulkString(body))
        }
        b'*' => {
            let Ok(len) = usize::try_from(number(line)?) else {
                return Some(Value::Nil);
            };
            // Every item takes at least 3 bytes: no allocation larger than the reply.
            let mut items = Vec::with_capacity(len.min(bytes.len() / 3));
            for _ in 0..len {
                items.push(value(bytes, at)?);
            }
            Some(Value::Array(items))
        }
        _ => None,
    }
}

fn number(line: &[u8]) -> Option<i64> {
    std::str::from_utf8(line).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{array, bulk, decode, frame};
    use redis::Value;

    #[test]
    fn frames_whole_replies_and_waits_for_the_rest() {
        let reply = b"*3\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n-ERR x\r\n";
        assert_eq!(frame(reply), Ok(Some(reply.len())));
        for cut in 0..reply.len() {
            assert_eq!(frame(&reply[..cut]), Ok(None), "cut at {cut}");
        }
        let two = b"+OK\r\n:5\r\n";
        assert_eq!(frame(two), Ok(Some(5)));
        assert_eq!(frame(b"*-1\r\n"), Ok(Some(5)));
        // A bulk string may hold CR LF.
        assert_eq!(frame(b"$4\r\na\r\nb\r\n"), Ok(Some(10)));
    }

    #[test]
    fn refuses_what_is_not_resp2() {
        assert!(frame(b"%1\r\n").is_err());
        assert!(frame(b"$x\r\n").is_err());
    }

    #[test]
    fn decodes_as_redis_rs_does() {
        let replies: [&[u8]; 9] = [
            b"*3\r\n$3\r\nabc\r\n*2\r\n:1\r\n$-1\r\n:-7\r\n",
            b"+OK\r\n",
            b"+QUEUED\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"$0\r\n\r\n",
            b"$4\r\na\r\nb\r\n",
            b"-ERR x y\r\n",
            b"*2\r\n:1\r\n-ERR inside\r\n",
        ];
        for reply in replies {
            let ours = decode(reply).map_err(|e| e.to_string());
            let theirs = redis::parse_redis_value(reply).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(reply));
        }
        assert_eq!(decode(b"$-1\r\n").ok(), Some(Value::Nil));
    }

    #[test]
    fn writes_requests_as_redis_rs_packs_them() {
        let args: [&[u8]; 4] = [b"FCALL", b"", b"k\r\n", "\u{e9}t\u{e9}".as_bytes()];
        let mut ours = Vec::new();
        array(&mut ours, args.len());
        for arg in args {
            bulk(&mut ours, arg);
        }
        let mut theirs = redis::cmd("FCALL");
        for arg in &args[1..] {
            theirs.arg(*arg);
        }
        assert_eq!(ours, theirs.get_packed_command());
    }
}
