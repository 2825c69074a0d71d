//! Writes a format fixture set: one index directory per built engine (a checkpoint plus a
//! WAL tail of flushed operations), for `tests/format_fixture.rs` to read back. Run it after
//! a deliberate on-disk format change, with the new manifest version:
//! `cargo run -p flashix --example write_fixture -- crates/flashix/tests/fixtures/v<N>`.

#[path = "../tests/fixture_history/mod.rs"]
mod fixture_history;

use fixture_history::{contents, history, options, ENGINES};
use flashix::Db;
use std::path::Path;

fn main() -> flashix::Result<()> {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: write_fixture DIR (e.g. crates/flashix/tests/fixtures/v2)");
        std::process::exit(2);
    };
    for kind in ENGINES {
        let dir = Path::new(&out).join(kind.name());
        let mut db = Db::create(&dir, options(kind))?;
        history(Some(&mut db), 0);
        db.close()?;
        let mut db = Db::open(&dir)?;
        let want = history(None, 1);
        // Apply the second session's operations onto the first's state.
        let first = history(None, 0);
        for k in first.keys() {
            if !want.contains_key(k) {
                db.delete(*k)?;
            }
        }
        for (&k, &v) in want.iter() {
            if first.get(&k) != Some(&v) {
                db.insert(k, v)?;
            }
        }
        db.flush()?;
        assert_eq!(contents(&mut db), want, "{kind}");
        // No close: the second session stays in the WAL, for `open` to replay.
        std::mem::forget(db);
        println!("wrote {}", dir.display());
    }
    Ok(())
}
