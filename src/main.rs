//! The `memcached-hook` binary: `serve` (default), `replay`, `render`, `crd`.

mod cli;

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
