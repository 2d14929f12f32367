//! `cargo-mcpp`: the thin binary behind `cargo mcpp`; everything is in the library.

fn main() {
    std::process::exit(cargo_mcpp::cli::main_with_args(
        std::env::args_os().collect(),
    ));
}
