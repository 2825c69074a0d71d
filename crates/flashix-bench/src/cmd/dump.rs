//! `flashix dump DIR`: every entry of an index, ascending, to standard output, from a
//! read-only open (`Db::open_read_only`: nothing in the directory changes, even when it was
//! not closed cleanly); and the dump format, which `flashix load` ([`super::load`]) reads
//! back ([`read_input`]).
//!
//! # Dump formats
//!
//! **Text** (the default): one `key value` line per entry, both decimal u64, separated by
//! one space, in ascending key order. `load` also accepts any run of spaces or tabs
//! between the two and skips empty lines.
//!
//! **Binary** (`--binary`), little-endian throughout:
//! ```text
//! offset  size   field
//! 0       8      magic "FLASHIXD"
//! 8       4      format version (1)
//! 12      4      reserved (0)
//! 16      16*n   n entries: key u64, value u64, ascending by key
//! 16+16n  8      n (entry count)
//! 24+16n  4      crc32c of the 16*n entry bytes
//! ```
//! `load` detects the form by the magic; with `--binary` it insists on it.

use super::progress;
use anyhow::{bail, Context, Result};
use flashix::Db;
use indicatif::ProgressBar;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;

/// Magic of the binary dump.
pub const DUMP_MAGIC: &[u8; 8] = b"FLASHIXD";
/// Version of the binary dump this build writes and reads.
pub const DUMP_VERSION: u32 = 1;

const HEADER: usize = 16;
const TRAILER: usize = 12;

/// `flashix dump DIR`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Write the binary form (see `flashix load --help`) instead of text.
    #[arg(long)]
    pub binary: bool,
}

/// Run `flashix dump`: every entry to standard output, ascending.
pub fn run(a: &DumpArgs) -> Result<()> {
    let mut db =
        Db::open_read_only(&a.dir).with_context(|| format!("opening {}", a.dir.display()))?;
    let pb = progress(0, "dump", "entries");
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let r = dump_to(&mut db, &mut out, a.binary, &pb).and_then(|()| Ok(out.flush()?));
    pb.finish_and_clear();
    match r {
        // A reader that stopped early (`| head`) is not an error.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        r => r,
    }
}

/// Write every entry of `db` to `out`, as text or in the binary form.
pub fn dump_to(db: &mut Db, out: &mut dyn Write, binary: bool, pb: &ProgressBar) -> Result<()> {
    let mut n = 0u64;
    let mut crc = 0u32;
    if binary {
        out.write_all(DUMP_MAGIC)?;
        out.write_all(&DUMP_VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
    }
    for kv in db.range(..)? {
        let (k, v) = kv?;
        if binary {
            let mut e = [0u8; 16];
            e[..8].copy_from_slice(&k.to_le_bytes());
            e[8..].copy_from_slice(&v.to_le_bytes());
            crc = crc32c::crc32c_append(crc, &e);
            out.write_all(&e)?;
        } else {
            writeln!(out, "{k} {v}")?;
        }
        n += 1;
        if n % 65_536 == 0 {
            pb.set_position(n);
        }
    }
    if binary {
        out.write_all(&n.to_le_bytes())?;
        out.write_all(&crc.to_le_bytes())?;
    }
    Ok(())
}

/// Parse `input` (text or binary, see the module doc) and hand every entry to `f`.
pub fn read_input(
    input: &mut dyn BufRead,
    binary: bool,
    f: &mut dyn FnMut(u64, u64) -> Result<()>,
) -> Result<()> {
    let head = input.fill_buf().context("reading standard input")?;
    let is_binary = head.len() >= DUMP_MAGIC.len() && &head[..DUMP_MAGIC.len()] == DUMP_MAGIC;
    if binary && !is_binary {
        bail!("--binary: the input does not start with the dump magic \"FLASHIXD\"");
    }
    if is_binary {
        read_binary(input, f)
    } else {
        read_text(input, f)
    }
}

fn read_text(input: &mut dyn BufRead, f: &mut dyn FnMut(u64, u64) -> Result<()>) -> Result<()> {
    let mut line = String::new();
    let mut no = 0u64;
    loop {
        line.clear();
        no += 1;
        let n = input
            .read_line(&mut line)
            .with_context(|| format!("line {no}: reading standard input"))?;
        if n == 0 {
            return Ok(());
        }
        let t = line.trim_end_matches(['\n', '\r']);
        if t.trim().is_empty() {
            continue;
        }
        let mut parts = t.split([' ', '\t']).filter(|p| !p.is_empty());
        let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
            bail!("line {no}: expected `key value` (two decimal numbers), found {t:?}");
        };
        let k: u64 = k
            .parse()
            .with_context(|| format!("line {no}: key {k:?} is not a decimal u64"))?;
        let v: u64 = v
            .parse()
            .with_context(|| format!("line {no}: value {v:?} is not a decimal u64"))?;
        f(k, v)?;
    }
}

fn read_binary(input: &mut dyn BufRead, f: &mut dyn FnMut(u64, u64) -> Result<()>) -> Result<()> {
    let mut header = [0u8; HEADER];
    input
        .read_exact(&mut header)
        .context("binary dump: the header is cut short")?;
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != DUMP_VERSION {
        bail!("binary dump: format version {version}, this build reads {DUMP_VERSION}");
    }
    // Entries are consumed while more than a trailer's worth of bytes follows them.
    let mut pending: Vec<u8> = Vec::with_capacity(1 << 17);
    let mut chunk = vec![0u8; 1 << 16];
    let mut count = 0u64;
    let mut crc = 0u32;
    loop {
        let n = input
            .read(&mut chunk)
            .context("binary dump: reading standard input")?;
        pending.extend_from_slice(&chunk[..n]);
        let usable = pending.len().saturating_sub(TRAILER) / 16 * 16;
        for e in pending[..usable].chunks_exact(16) {
            let k = u64::from_le_bytes(e[..8].try_into()?);
            let v = u64::from_le_bytes(e[8..].try_into()?);
            crc = crc32c::crc32c_append(crc, e);
            count += 1;
            f(k, v)?;
        }
        pending.drain(..usable);
        if n == 0 {
            break;
        }
    }
    if pending.len() != TRAILER {
        bail!(
            "binary dump: {} bytes after {count} entries at byte {}; expected the {TRAILER}-byte \
             trailer (count, crc32c): the dump is cut short or damaged",
            pending.len(),
            HEADER as u64 + count * 16
        );
    }
    let n = u64::from_le_bytes(pending[..8].try_into()?);
    let c = u32::from_le_bytes(pending[8..].try_into()?);
    if n != count {
        bail!("binary dump: the trailer says {n} entries, the dump holds {count}");
    }
    if c != crc {
        bail!("binary dump: checksum mismatch (trailer {c:08x}, entries {crc:08x})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8], binary: bool) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        read_input(&mut &bytes[..], binary, &mut |k, v| {
            out.push((k, v));
            Ok(())
        })?;
        Ok(out)
    }

    fn binary(pairs: &[(u64, u64)]) -> Vec<u8> {
        let mut b = DUMP_MAGIC.to_vec();
        b.extend_from_slice(&DUMP_VERSION.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        let mut crc = 0;
        for &(k, v) in pairs {
            let mut e = k.to_le_bytes().to_vec();
            e.extend_from_slice(&v.to_le_bytes());
            crc = crc32c::crc32c_append(crc, &e);
            b.extend_from_slice(&e);
        }
        b.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
        b.extend_from_slice(&u32::to_le_bytes(crc));
        b
    }

    #[test]
    fn text_input_parses_and_names_the_bad_line() {
        let ok = parse(b"1 10\n\n2\t20\r\n18446744073709551615 0\n", false).unwrap();
        assert_eq!(ok, vec![(1, 10), (2, 20), (u64::MAX, 0)]);
        for (bad, line) in [
            (&b"1 10\n2\n"[..], "line 2"),
            (b"1 10\n2 3 4\n", "line 2"),
            (b"1 10\n\nx 1\n", "line 3"),
            (b"18446744073709551616 1\n", "line 1"),
        ] {
            let e = format!("{:#}", parse(bad, false).unwrap_err());
            assert!(e.contains(line), "{e}");
        }
    }

    #[test]
    fn binary_input_round_trips_and_damage_is_caught() {
        let pairs: Vec<(u64, u64)> = (0..10_000u64).map(|i| (i * 7, u64::MAX - i)).collect();
        let b = binary(&pairs);
        assert_eq!(parse(&b, false).unwrap(), pairs, "detected by its magic");
        assert_eq!(parse(&b, true).unwrap(), pairs);
        assert_eq!(parse(&binary(&[]), true).unwrap(), vec![]);
        assert!(
            parse(b"1 2\n", true).is_err(),
            "--binary insists on the magic"
        );
        let mut flipped = b.clone();
        flipped[HEADER + 100] ^= 1;
        let e = format!("{:#}", parse(&flipped, true).unwrap_err());
        assert!(e.contains("checksum"), "{e}");
        let cut = &b[..b.len() - 20];
        let e = format!("{:#}", parse(cut, true).unwrap_err());
        assert!(e.contains("cut short"), "{e}");
    }
}
