//! The `flashix` command: `flashix probe` measures the device, `flashix bench` runs
//! workloads against engines (docs/benchmarking.md), `flashix compare` sets two runs side
//! by side, and `flashix check / stats / dump / load` operate an index. Every subcommand
//! lives in `flashix_bench::cmd`, its arguments beside its run; this only parses and
//! reports the error.

use clap::Parser;
use flashix_bench::cmd::{self, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
