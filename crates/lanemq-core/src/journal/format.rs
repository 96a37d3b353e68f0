//! The on-disk line format, CRC-32 and replay. Nothing here touches the file system.
//!
//! Every line is `<crc32 as 8 lowercase hex digits> <json>\n`, the CRC covering the JSON bytes.
//! JSON escapes control characters, so values containing newlines still take one line, and
//! UTF-8 never uses the byte 0x0A inside a multi-byte character. The first line is the header
//! `{"lanemq_journal":1,"namespace":"..."}`; every later line is a JSON array of ops, e.g.
//! `[{"op":"put","key":"k","value":"v"},{"op":"delete","key":"j"}]`. A single put or delete is
//! a one-element array, so a batch from `apply` is no different from a single op: one line,
//! one checksum, and so all-or-nothing on replay.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::JournalOp;

const VERSION: u32 = 1;

/// IEEE 802.3 (reflected 0xEDB88320) table, built at compile time so there is no lazy init.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

pub(super) fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[derive(Serialize, Deserialize)]
struct Header {
    lanemq_journal: u32,
    namespace: String,
}

// Arrays are tried first: data lines vastly outnumber the single header line.
#[derive(Deserialize)]
#[serde(untagged)]
enum Record {
    Ops(Vec<JournalOp>),
    Header(Header),
}

fn frame(json: Vec<u8>) -> Vec<u8> {
    let mut line = format!("{:08x} ", crc32(&json)).into_bytes();
    line.extend_from_slice(&json);
    line.push(b'\n');
    line
}

pub(super) fn header_line(namespace: &str) -> Vec<u8> {
    let header = Header {
        lanemq_journal: VERSION,
        namespace: namespace.to_owned(),
    };
    // Serializing plain structs of strings and integers to a Vec cannot fail.
    frame(serde_json::to_vec(&header).expect("journal header serializes"))
}

pub(super) fn ops_line(ops: &[JournalOp]) -> Vec<u8> {
    frame(serde_json::to_vec(ops).expect("journal ops serialize"))
}

/// `None` for anything that is not a complete, checksummed, parseable record.
fn decode_line(line: &[u8]) -> Option<Record> {
    if line.len() < 10 || line[8] != b' ' {
        return None;
    }
    let hex = std::str::from_utf8(&line[..8]).ok()?;
    let crc = u32::from_str_radix(hex, 16).ok()?;
    let body = &line[9..];
    if crc32(body) != crc {
        return None;
    }
    serde_json::from_slice(body).ok()
}

/// Live entries in first-put order. The BTreeMap gives ordered iteration by insertion number
/// while the HashMap keeps replace/delete O(1)-ish; a re-put after a delete goes to the end.
#[derive(Default)]
pub(super) struct Live {
    by_key: HashMap<String, (u64, String)>,
    order: BTreeMap<u64, String>,
    next: u64,
}

impl Live {
    pub(super) fn apply(&mut self, op: JournalOp) {
        match op {
            JournalOp::Put { key, value } => {
                if let Some(entry) = self.by_key.get_mut(&key) {
                    entry.1 = value;
                } else {
                    self.order.insert(self.next, key.clone());
                    self.by_key.insert(key, (self.next, value));
                    self.next += 1;
                }
            }
            JournalOp::Delete { key } => {
                if let Some((n, _)) = self.by_key.remove(&key) {
                    self.order.remove(&n);
                }
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }

    pub(super) fn entries(&self) -> Vec<(String, String)> {
        self.order
            .values()
            .map(|key| (key.clone(), self.by_key[key].1.clone()))
            .collect()
    }
}

pub(super) struct Replay {
    /// `None` when the file is empty or holds only a torn header: treat it as new.
    pub namespace: Option<String>,
    pub live: Live,
    /// Ops in the file, counted for the compaction threshold.
    pub records: u64,
    /// Length of the prefix made of good records; anything after it is a torn tail.
    pub good_len: u64,
}

pub(super) struct Corrupt {
    pub offset: usize,
    pub reason: String,
}

/// Replays `bytes`. A bad record followed only by bad records is a torn tail (a crash during
/// one group-commit write can leave several partial lines); a bad record followed by any good
/// one means bytes that were once fsynced changed, which no crash explains.
pub(super) fn replay(bytes: &[u8]) -> Result<Replay, Corrupt> {
    let mut out = Replay {
        namespace: None,
        live: Live::default(),
        records: 0,
        good_len: 0,
    };
    let mut first_bad: Option<(usize, &str)> = None;
    let mut pos = 0;
    while pos < bytes.len() {
        let (line, next) = match bytes[pos..].iter().position(|&b| b == b'\n') {
            Some(i) => (Some(&bytes[pos..pos + i]), pos + i + 1),
            None => (None, bytes.len()),
        };
        match (line.and_then(decode_line), first_bad) {
            (None, None) => {
                let reason = match line {
                    None => "incomplete record",
                    Some(_) => "bad checksum or malformed record",
                };
                first_bad = Some((pos, reason));
            }
            (None, Some(_)) => {}
            (Some(_), Some((offset, reason))) => {
                let reason = format!("{reason}, followed by intact records");
                return Err(Corrupt { offset, reason });
            }
            (Some(Record::Header(header)), None) => {
                let reason = if pos != 0 {
                    "header record in the middle of the journal".to_owned()
                } else if header.lanemq_journal != VERSION {
                    format!("unsupported journal version {}", header.lanemq_journal)
                } else {
                    out.namespace = Some(header.namespace);
                    out.good_len = next as u64;
                    pos = next;
                    continue;
                };
                return Err(Corrupt {
                    offset: pos,
                    reason,
                });
            }
            (Some(Record::Ops(ops)), None) => {
                if out.namespace.is_none() {
                    let reason = "record before the journal header".to_owned();
                    return Err(Corrupt {
                        offset: pos,
                        reason,
                    });
                }
                out.records += ops.len() as u64;
                ops.into_iter().for_each(|op| out.live.apply(op));
                out.good_len = next as u64;
            }
        }
        pos = next;
    }
    Ok(out)
}
