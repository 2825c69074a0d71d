//! The timing model (the parent module doc, Timing model): each operation of a batch on its
//! chip (way) and channel bus, and the simulated duration of the batch.

use super::Nand;

/// The kind and size of an operation, for the timing model.
#[derive(Clone, Copy)]
pub(super) enum Timed {
    Read { block: u32, bytes: usize },
    Program { block: u32, bytes: usize },
    Erase { block: u32 },
}

impl Nand {
    /// Simulated duration of a batch (module doc, Timing model).
    pub(super) fn batch_time(&self, ops: &[Timed]) -> f64 {
        if ops.is_empty() {
            return 0.0;
        }
        let ch = self.cfg.channels as usize;
        let ways = self.cfg.ways as usize;
        let mut bus = vec![0.0f64; ch];
        let mut chip = vec![0.0f64; ch * ways];
        let place = |block: u32| {
            let c = block as usize % ch;
            (c, c * ways + (block as usize / ch) % ways)
        };
        let xfer = |bytes: usize| bytes as f64 * self.cfg.bus_ns_per_byte / 1000.0;
        let mut end = 0.0f64;
        for op in ops {
            match *op {
                Timed::Read { block, bytes } => {
                    let (c, w) = place(block);
                    let cell_done = chip[w] + self.cfg.read_us;
                    let done = cell_done.max(bus[c]) + xfer(bytes);
                    chip[w] = done;
                    bus[c] = done;
                    end = end.max(done);
                }
                Timed::Program { block, bytes } => {
                    let (c, w) = place(block);
                    let sent = bus[c].max(chip[w]) + xfer(bytes);
                    bus[c] = sent;
                    chip[w] = sent + self.cfg.program_us;
                    end = end.max(chip[w]);
                }
                Timed::Erase { block } => {
                    let (_, w) = place(block);
                    chip[w] += self.cfg.erase_us;
                    end = end.max(chip[w]);
                }
            }
        }
        end
    }
}
