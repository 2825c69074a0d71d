//! Parsing of byte sizes given on the command line.

use anyhow::{bail, Context, Result};

/// Parse a byte size: a plain number of bytes (`4096`) or a number with a binary unit
/// suffix, case-insensitive: `K`/`KB`/`KiB` (1024), `M`/`MB`/`MiB`, `G`/`GB`/`GiB`,
/// `T`/`TB`/`TiB`; `B` is bytes. A fraction is allowed with a unit (`1.5G`).
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    if num.is_empty() {
        bail!("invalid size {s:?}: expected a number of bytes, or a number with a unit such as 16MiB, 4M or 1G");
    }
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => bail!("invalid size {s:?}: unknown unit {u:?} (use B, K, M, G or T, e.g. 16MiB)"),
    };
    if num.contains('.') {
        let x: f64 = num
            .parse()
            .with_context(|| format!("invalid size {s:?}: {num:?} is not a number"))?;
        let bytes = x * mult as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            bail!("invalid size {s:?}: too large");
        }
        Ok(bytes.round() as u64)
    } else {
        let n: u64 = num
            .parse()
            .with_context(|| format!("invalid size {s:?}: {num:?} is not a number"))?;
        n.checked_mul(mult)
            .with_context(|| format!("invalid size {s:?}: too large"))
    }
}

/// `bytes` in a short human form (`16 MiB`, `4096 B`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, m) in UNITS {
        if bytes >= m && bytes % m == 0 {
            return format!("{} {name}", bytes / m);
        }
        if bytes >= m {
            return format!("{:.1} {name}", bytes as f64 / m as f64);
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("1gb").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("512B").unwrap(), 512);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size(" 2 MiB ").unwrap(), 2 << 20);
        assert_eq!(parse_size("1_000").unwrap(), 1000);
        for bad in [
            "lots",
            "",
            "MiB",
            "12X",
            "1.2.3M",
            "-5",
            "99999999999999999999T",
            "20000000T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn format() {
        assert_eq!(format_size(16 << 20), "16 MiB");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(100), "100 B");
        assert_eq!(format_size(1536), "1.5 KiB");
    }
}
