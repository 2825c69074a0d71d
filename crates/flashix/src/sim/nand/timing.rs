//! The timing model (the parent module doc, Timing model): each operation of a batch on its
//! chip (way) and channel bus, the host-side timing a simulated SSD adds ([`HostTiming`]:
//! controller time per host command, write-back of programs), and the simulated clock.

use super::Nand;

/// Host-side timing of a simulated SSD on top of the NAND's own (parent module doc,
/// Timing model). Runtime settings of the [`Nand`], not part of its medium header; the
/// default (no command time, no write-back) is the plain NAND model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HostTiming {
    /// Latency of a host command in microseconds before its NAND operations start
    /// (interface, command decoding, FTL firmware). The commands of one batch are queued
    /// together (NCQ), so their latencies overlap.
    pub command_us: f64,
    /// Write-back: a program is acknowledged once its data reached the chip, so a batch
    /// ends before its programs and erases do; later operations on that chip wait for
    /// them, and [`Nand::drain`] waits for all of them.
    pub write_back: bool,
}

/// The kind and size of an operation, for the timing model.
#[derive(Clone, Copy)]
pub(super) enum Timed {
    /// The start of a host command (its controller time).
    Command,
    Read {
        block: u32,
        bytes: usize,
    },
    Program {
        block: u32,
        bytes: usize,
    },
    Erase {
        block: u32,
    },
}

/// The simulated clock: the time now and when each channel bus and chip is next free
/// (absolute microseconds since the `Nand` was created or opened).
#[derive(Debug, Clone, Default)]
pub(super) struct Clock {
    now: f64,
    bus: Vec<f64>,
    chip: Vec<f64>,
}

impl Clock {
    pub(super) fn new(channels: u32, ways: u32) -> Clock {
        Clock {
            now: 0.0,
            bus: vec![0.0; channels as usize],
            chip: vec![0.0; (channels * ways) as usize],
        }
    }
}

impl Nand {
    /// Run a batch on the clock and add its simulated duration to the counters (module
    /// doc, Timing model).
    pub(super) fn run_batch(&mut self, ops: &[Timed]) {
        if ops.is_empty() {
            return;
        }
        let ch = self.cfg.channels as usize;
        let ways = self.cfg.ways as usize;
        let host = self.host_timing;
        let clock = &mut self.clock;
        let start = clock.now;
        if !host.write_back {
            // Every earlier batch waited for its last operation: all is idle now.
            clock.bus.fill(start);
            clock.chip.fill(start);
        }
        let place = |block: u32| {
            let c = block as usize % ch;
            (c, c * ways + (block as usize / ch) % ways)
        };
        let xfer = |bytes: usize| bytes as f64 * self.cfg.bus_ns_per_byte / 1000.0;
        // Earliest start of the NAND operations of the current command.
        let mut ready = start;
        let mut end = start;
        for op in ops {
            match *op {
                Timed::Command => {
                    ready = start + host.command_us;
                    end = end.max(ready);
                }
                Timed::Read { block, bytes } => {
                    let (c, w) = place(block);
                    let cell_done = clock.chip[w].max(ready) + self.cfg.read_us;
                    let done = cell_done.max(clock.bus[c]) + xfer(bytes);
                    clock.chip[w] = done;
                    clock.bus[c] = done;
                    end = end.max(done);
                }
                Timed::Program { block, bytes } => {
                    let (c, w) = place(block);
                    let sent = clock.bus[c].max(clock.chip[w]).max(ready) + xfer(bytes);
                    clock.bus[c] = sent;
                    clock.chip[w] = sent + self.cfg.program_us;
                    end = end.max(if host.write_back { sent } else { clock.chip[w] });
                }
                Timed::Erase { block } => {
                    let (_, w) = place(block);
                    clock.chip[w] = clock.chip[w].max(ready) + self.cfg.erase_us;
                    if !host.write_back {
                        end = end.max(clock.chip[w]);
                    }
                }
            }
        }
        clock.now = end;
        self.stats.time_us += end - start;
    }

    /// Wait (in simulated time) until every chip and bus is idle: with write-back, the
    /// programs and erases still running finish (a host flush).
    pub fn drain(&mut self) {
        let c = &mut self.clock;
        let idle = c.bus.iter().chain(&c.chip).fold(c.now, |a, &b| a.max(b));
        self.stats.time_us += idle - c.now;
        c.now = idle;
    }

    /// Set the host-side timing (a simulated SSD's controller; [`HostTiming`]).
    pub fn set_host_timing(&mut self, t: HostTiming) {
        self.host_timing = t;
    }

    /// The host-side timing in effect.
    pub fn host_timing(&self) -> HostTiming {
        self.host_timing
    }

    /// A host command starts: the NAND operations that follow (in the current batch) start
    /// `command_us` after the batch does.
    pub fn host_command(&mut self) {
        match &mut self.pending {
            Some(p) => p.push(Timed::Command),
            None => self.run_batch(&[Timed::Command]),
        }
    }
}
