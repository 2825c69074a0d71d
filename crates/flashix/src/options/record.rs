//! The options record of the manifest: [`Options`] as the manifest stores them, in an
//! explicit shape of its own, so that renaming a field of the API type cannot silently
//! change the on-disk format.
//!
//! Manifest format 2 (this build writes it), a JSON object:
//! ```text
//! page_size             u64     page (node) size in bytes
//! buffer_pool_bytes     u64     memory budget
//! device                object  DeviceSpec, externally tagged ("File", "Memory",
//!                               "SimulatedSsd", "RawNand")
//! checkpoint_wal_bytes  u64
//! tuning                object or null  cost-model inputs (crate::cost::Tuning)
//! engine                object  the engine's own options, tagged by engine kind:
//!                               {"FdTree": {"k": .., "head_tree_bytes": .., ...}}
//! ```
//! Unknown fields are refused (a record of a newer build is not half-read).
//!
//! Manifest format 1 (the builds before this record) stored the old `Options` struct: `engine` (the
//! kind), the common fields above, and one object per engine (`btree`, `fdtree`, `lsm`,
//! `pio`, `ipl`, `dipl`, `bftl`, most optional). [`decode`] reads it and keeps the chosen
//! engine's object; the next checkpoint rewrites the manifest as format 2.

use super::{
    BTreeOptions, BftlOptions, DiplOptions, FdTreeOptions, IplOptions, LsmOptions, PioOptions,
};
use super::{DeviceSpec, EngineOptions, Options, Tuning};
use crate::durable::manifest::MANIFEST;
use crate::durable::OptionsRecord;
use crate::error::{Error, Result};
use crate::kind::EngineKind;
use serde::{Deserialize, Serialize};

/// Format 2.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordV2 {
    page_size: usize,
    buffer_pool_bytes: u64,
    device: DeviceSpec,
    checkpoint_wal_bytes: u64,
    tuning: Option<Tuning>,
    engine: EngineOptions,
}

/// Format 1: the `Options` struct of the builds before this record, as serde wrote it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordV1 {
    engine: EngineKind,
    page_size: usize,
    buffer_pool_bytes: u64,
    device: DeviceSpec,
    checkpoint_wal_bytes: u64,
    btree: BTreeOptions,
    #[serde(default)]
    fdtree: FdTreeOptions,
    #[serde(default)]
    lsm: LsmOptions,
    #[serde(default)]
    tuning: Option<Tuning>,
    #[serde(default)]
    pio: PioOptions,
    #[serde(default)]
    ipl: IplOptions,
    #[serde(default)]
    dipl: DiplOptions,
    #[serde(default)]
    bftl: BftlOptions,
}

/// The record of `opts` (format 2).
pub(crate) fn encode(opts: &Options) -> Result<OptionsRecord> {
    let r = RecordV2 {
        page_size: opts.page_size,
        buffer_pool_bytes: opts.buffer_pool_bytes,
        device: opts.device.clone(),
        checkpoint_wal_bytes: opts.checkpoint_wal_bytes,
        tuning: opts.tuning.clone(),
        engine: opts.sub_options.clone(),
    };
    serde_json::to_value(r)
        .map_err(|e| Error::InvalidArgument(format!("cannot encode the options record: {e}")))
}

/// The options of a record read from a manifest of `format_version`.
pub(crate) fn decode(record: &OptionsRecord, format_version: u32) -> Result<Options> {
    let bad = |e: serde_json::Error| {
        Error::corruption(
            MANIFEST,
            None,
            format!("undecodable options record (format {format_version}): {e}"),
        )
    };
    match format_version {
        1 => {
            let r = RecordV1::deserialize(record).map_err(bad)?;
            // Format 1 had an object for these engines only; the others take their defaults.
            let sub = match r.engine {
                EngineKind::BTree => EngineOptions::BTree(r.btree),
                EngineKind::Lsm => EngineOptions::Lsm(r.lsm),
                EngineKind::FdTree => EngineOptions::FdTree(r.fdtree),
                EngineKind::PioBTree => EngineOptions::PioBTree(r.pio),
                EngineKind::Bftl => EngineOptions::Bftl(r.bftl),
                EngineKind::IplBTree => EngineOptions::IplBTree(r.ipl),
                EngineKind::DiplBTree => EngineOptions::DiplBTree(r.dipl),
                other => EngineOptions::defaults(other),
            };
            Ok(Options {
                page_size: r.page_size,
                buffer_pool_bytes: r.buffer_pool_bytes,
                device: r.device,
                checkpoint_wal_bytes: r.checkpoint_wal_bytes,
                tuning: r.tuning,
                sub_options: sub,
            })
        }
        // Formats 3 to 10 changed engine states, pages and WAL records, not the record's
        // shape (8 added the LSM-tree's `deamortize`, absent: on).
        2..=10 => {
            let r = RecordV2::deserialize(record).map_err(bad)?;
            Ok(Options {
                page_size: r.page_size,
                buffer_pool_bytes: r.buffer_pool_bytes,
                device: r.device,
                checkpoint_wal_bytes: r.checkpoint_wal_bytes,
                tuning: r.tuning,
                sub_options: r.engine,
            })
        }
        found => Err(Error::UnsupportedVersion {
            found,
            supported: crate::durable::manifest::FORMAT_VERSION,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record of every engine's default options, frozen: a renamed or added field of
    /// an options type changes this text, and must come with a new format version.
    #[test]
    fn default_records_are_frozen() {
        let want = [
            (EngineKind::BTree, r#"{"BTree":{"bulk_fill":0.7}}"#),
            (
                EngineKind::Lsm,
                r#"{"Lsm":{"c0_bytes":524288,"deamortize":true,"io_unit_bytes":524288,"k":null,"search_before_delete":false}}"#,
            ),
            (
                EngineKind::FdTree,
                r#"{"FdTree":{"deamortize":true,"head_tree_bytes":524288,"io_unit_bytes":524288,"k":null}}"#,
            ),
            (
                EngineKind::PioBTree,
                r#"{"PioBTree":{"bcnt":5000,"leaf_segments":null,"opq_bytes":null,"pio_max":64,"speriod":5000}}"#,
            ),
            (
                EngineKind::BulkIndex,
                r#"{"BulkIndex":{"append_only":false,"batch_ranges":true,"batch_reads":true,"batch_writes":true,"delta_bytes":null,"io_unit_bytes":524288,"m":null,"trim_freed":true}}"#,
            ),
            (
                EngineKind::Bftl,
                r#"{"Bftl":{"c":null,"node_bytes":8192,"reservation_units":null}}"#,
            ),
            (
                EngineKind::LaTree,
                r#"{"LaTree":{"adapt":true,"k":2,"max_buffer_pages":64,"node_bytes":0}}"#,
            ),
            (
                EngineKind::Fbx,
                r#"{"Fbx":{"batched_scans":true,"clean":{"AccumulateClean":{"threshold":64}},"cluster_bits":8,"cluster_skip_bits":0,"inner_order":null,"leaf_logging":true,"leaf_order":null,"log_buffer_pages":null,"segment_pages":256,"space_amp_limit":2.0}}"#,
            ),
            (
                EngineKind::IplBTree,
                r#"{"IplBTree":{"buffer_frames":null,"log_area_bytes":8192,"nand_blocks":1024,"node_bytes":8192,"pages_per_block":64}}"#,
            ),
            (
                EngineKind::DiplBTree,
                r#"{"DiplBTree":{"buffer_frames":null,"nand_blocks":1024,"node_bytes":8192,"pages_per_block":64}}"#,
            ),
        ];
        for (kind, engine) in want {
            let rec = encode(&Options::new(kind)).unwrap();
            assert_eq!(rec["engine"].to_string(), engine, "{kind:?}");
            let keys: Vec<&str> = rec
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(
                keys,
                [
                    "buffer_pool_bytes",
                    "checkpoint_wal_bytes",
                    "device",
                    "engine",
                    "page_size",
                    "tuning"
                ]
            );
            assert_eq!(decode(&rec, 2).unwrap(), Options::new(kind), "{kind:?}");
        }
    }

    /// The B+-tree's node orders are recorded when set and read back; unset, the record is
    /// the one earlier builds wrote (`default_records_are_frozen`), and a record without them
    /// reads as unset.
    #[test]
    fn btree_orders_are_recorded_only_when_set() {
        let o = Options::new(EngineKind::BTree)
            .page_size(8192)
            .btree(BTreeOptions::orders(100, 500));
        let rec = encode(&o).unwrap();
        assert_eq!(
            rec["engine"].to_string(),
            r#"{"BTree":{"bulk_fill":0.7,"inner_order":500,"leaf_order":100}}"#
        );
        assert_eq!(decode(&rec, 2).unwrap(), o);
        let leaf_only = Options::new(EngineKind::BTree).btree(BTreeOptions {
            leaf_order: Some(8),
            ..BTreeOptions::default()
        });
        let rec = encode(&leaf_only).unwrap();
        assert_eq!(
            rec["engine"].to_string(),
            r#"{"BTree":{"bulk_fill":0.7,"leaf_order":8}}"#
        );
        assert_eq!(decode(&rec, 2).unwrap(), leaf_only);
        let mut old = encode(&Options::new(EngineKind::BTree)).unwrap();
        old["engine"] = serde_json::json!({"BTree": {"bulk_fill": 0.7}});
        assert_eq!(
            decode(&old, 2).unwrap().btree_options(),
            BTreeOptions::default()
        );
    }

    /// A format-1 record (the old `Options` struct) reads back as the chosen engine's
    /// options, whatever the other engines' objects say.
    #[test]
    fn format_1_records_are_read() {
        let v1 = serde_json::json!({
            "engine": "FdTree", "page_size": 512, "buffer_pool_bytes": 65536,
            "device": {"File": {"direct_io": false}}, "checkpoint_wal_bytes": 134217728,
            "btree": {"bulk_fill": 0.7},
            "fdtree": {"k": 4, "head_tree_bytes": 2048, "deamortize": true, "io_unit_bytes": 4096},
            "lsm": {"k": null, "c0_bytes": 524288, "io_unit_bytes": 524288},
            "tuning": null
        });
        let o = decode(&v1, 1).unwrap();
        assert_eq!(o.engine(), EngineKind::FdTree);
        assert_eq!(o.fdtree_options().k, Some(4));
        assert_eq!(o.page_size, 512);
        assert_eq!(o.device, DeviceSpec::File { direct_io: false });
        let newer = crate::durable::manifest::FORMAT_VERSION + 1;
        assert!(matches!(
            decode(&v1, newer),
            Err(Error::UnsupportedVersion { found, .. }) if found == newer
        ));
        for version in 2..newer {
            assert!(matches!(
                decode(&v1, version),
                Err(Error::Corruption { .. })
            ));
        }
    }
}
