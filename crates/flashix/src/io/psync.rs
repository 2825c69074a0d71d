//! psync I/O (PIO B-tree paper, §2.3): a *group* of page requests delivered to the device at
//! once, returning when all of them are done — synchronous for the caller, parallel inside
//! the SSD, and with no extra threads. It is [`Device::submit`] with two rules on top:
//!
//! - a group never mixes reads and writes (§2.3, principle 3: "no mingled read/writes"),
//!   which the types here enforce (one function per direction);
//! - a group holds at most `pio_max` requests (§3.1.1: `PioMax` bounds both the outstanding
//!   I/O level and the buffer memory a group needs); longer lists are cut into consecutive
//!   groups, each one `submit`.
//!
//! A request may span several contiguous pages (a PIO B-tree leaf of `L` segments is one
//! request of `L` pages, §3.2.2: package-level parallelism); it stays one request.

use super::{AlignedBuf, Device, IoReq, PageId, SharedReader};
use crate::error::{Error, Result};

/// One contiguous run of pages: first page and number of pages (at least one).
pub type Run = (PageId, u64);

/// Read every run, in groups of at most `pio_max` requests per [`Device::submit`]; returns
/// one buffer per run, in the order given.
pub fn read_runs(dev: &mut dyn Device, runs: &[Run], pio_max: usize) -> Result<Vec<AlignedBuf>> {
    let ps = dev.page_size();
    read_runs_by(ps, runs, pio_max, |reqs| dev.submit(reqs))
}

/// [`read_runs`] through a device's [`SharedReader`], from any of many threads at once:
/// each group one [`SharedReader::read_batch`].
pub fn read_runs_shared(
    reader: &dyn SharedReader,
    page_size: usize,
    runs: &[Run],
    pio_max: usize,
) -> Result<Vec<AlignedBuf>> {
    read_runs_by(page_size, runs, pio_max, |reqs| reader.read_batch(reqs))
}

/// [`read_runs`] with each group given to `submit`.
fn read_runs_by(
    ps: usize,
    runs: &[Run],
    pio_max: usize,
    mut submit: impl FnMut(&mut [IoReq<'_>]) -> Result<()>,
) -> Result<Vec<AlignedBuf>> {
    let mut out: Vec<AlignedBuf> = Vec::with_capacity(runs.len());
    for &(page, pages) in runs {
        if pages == 0 {
            return Err(Error::InvalidArgument(format!(
                "psync read of zero pages at page {page}"
            )));
        }
        let len = usize::try_from(pages)
            .ok()
            .and_then(|p| p.checked_mul(ps))
            .ok_or_else(|| Error::InvalidArgument(format!("run of {pages} pages is too long")))?;
        out.push(AlignedBuf::zeroed(len));
    }
    let group = pio_max.max(1);
    let mut start = 0;
    for chunk in out.chunks_mut(group) {
        let mut reqs: Vec<IoReq<'_>> = chunk
            .iter_mut()
            .zip(&runs[start..])
            .map(|(buf, &(page, _))| IoReq::Read {
                page,
                buf: &mut buf[..],
            })
            .collect();
        start += reqs.len();
        submit(&mut reqs)?;
    }
    Ok(out)
}

/// Write every `(first page, bytes)` request, in groups of at most `pio_max` requests per
/// [`Device::submit`]. The engines write their groups through the Pager; this is for tests.
#[cfg(any(test, feature = "testing"))]
pub fn write_runs(dev: &mut dyn Device, writes: &[(PageId, &[u8])], pio_max: usize) -> Result<()> {
    for chunk in writes.chunks(pio_max.max(1)) {
        let mut reqs: Vec<IoReq<'_>> = chunk
            .iter()
            .map(|&(page, buf)| IoReq::Write { page, buf })
            .collect();
        dev.submit(&mut reqs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;

    #[test]
    fn groups_are_bounded_by_pio_max_and_runs_stay_one_request() {
        let mut dev = MemDevice::new(512);
        let pages: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 512 * 2]).collect();
        let writes: Vec<(PageId, &[u8])> = pages
            .iter()
            .enumerate()
            .map(|(i, b)| (2 * i as u64, &b[..]))
            .collect();
        write_runs(&mut dev, &writes, 4).unwrap();
        let s = dev.stats();
        assert_eq!((s.batches, s.write_requests, s.writes), (3, 10, 20));
        assert_eq!(s.max_queue_depth, 4);
        assert_eq!(s.read_batches, 0);
        let runs: Vec<Run> = (0..10u64).map(|i| (2 * i, 2)).collect();
        let bufs = read_runs(&mut dev, &runs, 16).unwrap();
        let s = dev.stats();
        assert_eq!((s.batches, s.read_requests, s.reads), (4, 10, 20));
        assert_eq!(s.max_queue_depth, 10);
        // One read batch of 10: a mean read queue depth of 10.
        assert_eq!(s.read_batches, 1);
        for (i, b) in bufs.iter().enumerate() {
            assert!(b.iter().all(|&x| x == i as u8));
        }
        assert!(read_runs(&mut dev, &[(0, 0)], 4).is_err());
    }
}
