use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use super::format::{self, crc32};
use super::{Journal, JournalOp};
use crate::error::CoreError;

/// A unique directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("lanemq-journal-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        TempDir(dir)
    }

    /// Nested so that `open` has to create the directories.
    fn journal(&self) -> PathBuf {
        self.0.join("nested").join("lane.journal")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn open(path: &Path) -> (Journal, Vec<(String, String)>) {
    Journal::open(path, "ns").expect("open journal")
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

fn put(key: &str, value: &str) -> JournalOp {
    JournalOp::Put {
        key: key.into(),
        value: value.into(),
    }
}

#[test]
fn crc32_matches_the_ieee_check_value() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn reopen_returns_first_put_order_and_replace_keeps_position() {
    let dir = TempDir::new("order");
    let path = dir.journal();
    let (journal, entries) = open(&path);
    assert!(entries.is_empty() && journal.is_empty());
    assert_eq!(journal.path(), path.as_path());
    let odd = "{\"text\": \"line one\nline two\", \"emoji\": \"é ✓ 🚀\"}";
    journal.put("b", "1").unwrap();
    journal.put("a", odd).unwrap();
    journal.put("c", "3").unwrap();
    journal.put("b", "2").unwrap();
    assert_eq!(journal.len(), 3);
    drop(journal);

    let (journal, entries) = open(&path);
    assert_eq!(entries, pairs(&[("b", "2"), ("a", odd), ("c", "3")]));
    assert_eq!(journal.len(), 3);
    assert!(matches!(
        journal.put("", "x"),
        Err(CoreError::InvalidConfig(_))
    ));
}

#[test]
fn delete_removes_and_a_later_put_goes_last() {
    let dir = TempDir::new("delete");
    let path = dir.journal();
    let (journal, _) = open(&path);
    for key in ["a", "b", "c"] {
        journal.put(key, key).unwrap();
    }
    journal.delete("a").unwrap();
    journal.delete("missing").unwrap();
    journal.delete("b").unwrap();
    journal.put("b", "again").unwrap();
    assert_eq!(journal.len(), 2);
    drop(journal);

    let (_journal, entries) = open(&path);
    assert_eq!(entries, pairs(&[("c", "c"), ("b", "again")]));
}

#[test]
fn apply_is_one_record_and_a_torn_apply_is_dropped_whole() {
    let dir = TempDir::new("apply");
    let path = dir.journal();
    let (journal, _) = open(&path);
    journal.put("keep", "1").unwrap();
    journal.put("gone", "1").unwrap();
    journal
        .apply(vec![
            put("x", "1"),
            JournalOp::Delete { key: "gone".into() },
            put("y", "2"),
        ])
        .unwrap();
    journal.apply(Vec::new()).unwrap();
    assert_eq!(journal.len(), 3);
    drop(journal);
    let good_len = fs::metadata(&path).unwrap().len();
    let lines = fs::read_to_string(&path).unwrap().lines().count();
    assert_eq!(lines, 4, "header, two puts, one batch line");

    // A crash halfway through writing a batch: only a prefix of its line reached the disk.
    let torn = format::ops_line(&[put("z", "1"), JournalOp::Delete { key: "x".into() }]);
    append_raw(&path, &torn[..torn.len() / 2]);
    let (_journal, entries) = open(&path);
    assert_eq!(entries, pairs(&[("keep", "1"), ("x", "1"), ("y", "2")]));
    assert_eq!(fs::metadata(&path).unwrap().len(), good_len);
}

#[test]
fn torn_tail_is_truncated_and_appends_continue() {
    let dir = TempDir::new("torn");
    let path = dir.journal();
    let (journal, _) = open(&path);
    journal.put("a", "1").unwrap();
    drop(journal);
    let good_len = fs::metadata(&path).unwrap().len();

    // A complete line with a wrong checksum, then a partial one: both are the torn tail.
    let mut bad = format::ops_line(&[put("b", "2")]);
    bad[0] = if bad[0] == b'0' { b'1' } else { b'0' };
    append_raw(&path, &bad);
    append_raw(&path, b"0badc0de [{\"op\":\"pu");
    let (journal, entries) = open(&path);
    assert_eq!(entries, pairs(&[("a", "1")]));
    assert_eq!(fs::metadata(&path).unwrap().len(), good_len);
    journal.put("c", "3").unwrap();
    drop(journal);

    let (_journal, entries) = open(&path);
    assert_eq!(entries, pairs(&[("a", "1"), ("c", "3")]));
}

#[test]
fn a_torn_header_is_rewritten() {
    let dir = TempDir::new("torn-header");
    let path = dir.journal();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let header = format::header_line("ns");
    fs::write(&path, &header[..5]).unwrap();
    let (journal, entries) = open(&path);
    assert!(entries.is_empty());
    journal.put("a", "1").unwrap();
    drop(journal);
    assert_eq!(open(&path).1, pairs(&[("a", "1")]));
}

#[test]
fn corruption_followed_by_good_records_is_an_error() {
    let dir = TempDir::new("corrupt");
    let path = dir.journal();
    let (journal, _) = open(&path);
    for key in ["a", "b", "c"] {
        journal.put(key, "value").unwrap();
    }
    drop(journal);
    let mut bytes = fs::read(&path).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let offset = text.find("\"b\"").unwrap();
    let line_start = text[..offset].rfind('\n').unwrap() + 1;
    bytes[offset + 1] = b'B';
    fs::write(&path, &bytes).unwrap();

    match Journal::open(&path, "ns") {
        Err(CoreError::Storage(msg)) => {
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(msg.contains(&format!("offset {line_start}")), "{msg}");
        }
        other => panic!("expected corruption error, got {:?}", other.map(|r| r.1)),
    }
    assert_eq!(
        fs::read(&path).unwrap(),
        bytes,
        "a corrupt file is left alone"
    );
}

#[test]
fn another_namespace_is_refused() {
    let dir = TempDir::new("namespace");
    let path = dir.journal();
    drop(Journal::open(&path, "alpha").unwrap());
    match Journal::open(&path, "beta") {
        Err(CoreError::InvalidConfig(msg)) => {
            assert!(msg.contains("alpha") && msg.contains("beta"), "{msg}");
        }
        other => panic!("expected InvalidConfig, got {:?}", other.map(|r| r.1)),
    }
    assert!(Journal::open(&path, "alpha").is_ok());
}

#[test]
fn second_open_is_refused_until_the_first_is_dropped() {
    let dir = TempDir::new("lock");
    let path = dir.journal();
    let (first, _) = open(&path);
    first.put("a", "1").unwrap();
    match Journal::open(&path, "ns") {
        Err(CoreError::Storage(msg)) => assert!(msg.contains("in use"), "{msg}"),
        other => panic!("expected in-use error, got {:?}", other.map(|r| r.1)),
    }
    drop(first);
    let (_second, entries) = open(&path);
    assert_eq!(entries, pairs(&[("a", "1")]));
}

#[test]
fn compaction_shrinks_the_file_and_keeps_entries() {
    let dir = TempDir::new("compact");
    let path = dir.journal();
    let (journal, _) = open(&path);
    let value = "x".repeat(100);
    for i in 0..999 {
        journal.put(&format!("k{}", i % 10), &value).unwrap();
    }
    let before = fs::metadata(&path).unwrap().len();
    journal.delete("k9").unwrap();
    journal.put("k3", "last").unwrap(); // the 1001st record triggers compaction
    let after = fs::metadata(&path).unwrap().len();
    assert!(
        after * 50 < before,
        "{after} not much smaller than {before}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 1 + 9);
    assert!(!dir.journal().with_extension("journal.tmp").exists());
    // The compacted file is still appended to, and the lock still holds.
    journal.put("new", "1").unwrap();
    assert!(Journal::open(&path, "ns").is_err());
    drop(journal);

    let mut expected: Vec<(String, String)> =
        (0..9).map(|i| (format!("k{i}"), value.clone())).collect();
    expected[3].1 = "last".into();
    expected.push(("new".into(), "1".into()));
    assert_eq!(open(&path).1, expected);
}

#[test]
fn open_compacts_a_bloated_file() {
    let dir = TempDir::new("compact-open");
    let path = dir.journal();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut bytes = format::header_line("ns");
    for i in 0..1500 {
        bytes.extend(format::ops_line(&[put(
            &format!("k{}", i % 3),
            &i.to_string(),
        )]));
    }
    fs::write(&path, &bytes).unwrap();
    let (journal, entries) = open(&path);
    assert_eq!(
        entries,
        pairs(&[("k0", "1497"), ("k1", "1498"), ("k2", "1499")])
    );
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 4);
    journal.put("k3", "x").unwrap();
    drop(journal);
    assert_eq!(open(&path).1.len(), 4);
}

#[test]
fn concurrent_puts_all_survive_reopen() {
    let dir = TempDir::new("concurrent");
    let path = dir.journal();
    let (journal, _) = open(&path);
    let journal = Arc::new(journal);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let journal = Arc::clone(&journal);
            thread::spawn(move || {
                for i in 0..50 {
                    journal
                        .put(&format!("t{t}-{i:02}"), &i.to_string())
                        .unwrap();
                }
                journal.delete(&format!("t{t}-00")).unwrap();
            })
        })
        .collect();
    for handle in threads {
        handle.join().unwrap();
    }
    assert_eq!(journal.len(), 8 * 49);
    drop(journal);

    let (_journal, entries) = open(&path);
    assert_eq!(entries.len(), 8 * 49);
    for t in 0..8 {
        // Each thread's puts were sequential, so their relative order must survive.
        let mine: Vec<_> = entries
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("t{t}-")))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let expected: Vec<_> = (1..50)
            .map(|i| (format!("t{t}-{i:02}"), i.to_string()))
            .collect();
        assert_eq!(mine, expected);
    }
}
