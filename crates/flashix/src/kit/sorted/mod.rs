//! Sorted pages of typed entries: the entry and page format ([`entry`], FD-tree paper
//! §3.2), the head tree kept through the buffer pool ([`head`]) and the sequential reader
//! of a contiguous range of sorted pages ([`seq`], App. D), range tombstones ([`tombs`])
//! and the pace of a deamortized merge ([`pace`], §3.4) or its run on the merge thread
//! ([`job`]), the read protocol of both engines with the thread-safety constants it
//! allows ([`reads`]), and the bookkeeping of the point writes made into a head tree under
//! the engine's shared lock ([`shared`]). Shared by the FD-tree (its runs and head tree) and the LSM-tree (its
//! components and C0).

pub mod entry;
pub(crate) mod head;
pub(crate) mod job;
pub(crate) mod memo;
pub mod newest;
pub(crate) mod pace;
pub(crate) mod reads;
pub(crate) mod seq;
pub(crate) mod shared;
#[cfg(test)]
pub(crate) mod testing;
pub mod tombs;
pub(crate) mod tune;
