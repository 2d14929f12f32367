//! `cargo mcpp why tool <name>`: print the resolver's recorded decision for a tool (the
//! program, its version, where it came from, what was consulted before it, the refusal) from
//! the device cache of the selected packages' last build.

use super::locate::locate;
use super::WhyToolArgs;
use crate::engine::layout::DeviceCache;
use crate::error::{exit_code, Error, ErrorKind, Result};

/// Print the decision for `args.name` from the first selected package that recorded one.
///
/// # Errors
/// [`ErrorKind::Usage`] for a name no build recorded that is no tool of any rule (listing
/// them);
/// [`ErrorKind::Manifest`] when no build recorded the tool, naming the files looked in.
pub fn why_tool(args: &WhyToolArgs) -> Result<i32> {
    // A record answers for any name (a tool recorded by a build is shown, whatever recorded
    // it); a name that none has recorded and no rule runs is refused as such.
    let known = known_tools();
    let is_known = known.contains(&args.name.as_str());
    let located = match locate(&args.location, &args.selection) {
        Ok(l) => l,
        Err(_) if !is_known => return Err(unknown_tool(&args.name, &known)),
        Err(e) => return Err(e),
    };
    let mut looked = Vec::new();
    for (package, _) in &located.packages {
        let cache = DeviceCache::in_profile(&located.profile_path, package);
        let all = crate::tool::read_decisions(&cache);
        let file = cache.tool_decisions();
        let Some(d) = all.get(&args.name) else {
            looked.push(format!(
                "{} (recorded: {})",
                crate::text::echo_path(&file),
                if all.is_empty() {
                    "nothing".to_string()
                } else {
                    all.keys()
                        .map(|k| crate::text::echo(k))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
            continue;
        };
        // The record is a file (written by a build, or edited): every value shown escaped and
        // cut (`text::echo`), a tool's version included, so no ESC sequence reaches the terminal.
        use crate::text::{echo, echo_path, escape_control};
        use std::fmt::Write as _;
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{} for package {package} (recorded in {})",
            echo(&d.tool),
            echo_path(&file)
        );
        match &d.answer {
            Some(a) => {
                let _ = writeln!(out, "  answer:  {}", echo_path(a));
            }
            None => {
                let _ = writeln!(out, "  answer:  none");
            }
        }
        if let Some(v) = &d.version {
            let _ = writeln!(out, "  version: {}", echo(v));
        }
        let _ = writeln!(out, "  source:  {}", escape_control(&d.source));
        let _ = writeln!(out, "  from:    {}", escape_control(&d.origin));
        if let Some(r) = &d.reason {
            let _ = writeln!(out, "  chosen:  {}", escape_control(r));
        }
        if let Some(root) = &d.toolkit {
            let _ = writeln!(out, "  toolkit: {}", echo_path(root));
            if let Some(o) = &d.toolkit_origin {
                let _ = writeln!(out, "    from:  {}", escape_control(o));
            }
        }
        if !d.considered.is_empty() {
            let _ = writeln!(out, "  considered before it:");
            for c in &d.considered {
                let _ = writeln!(out, "    {}", escape_control(c));
            }
        }
        if let Some(w) = &d.warning {
            let _ = writeln!(out, "  warning: {}", escape_control(w));
        }
        if let Some(r) = &d.refusal {
            let _ = writeln!(out, "  refused:");
            for line in r.lines() {
                let _ = writeln!(out, "    {}", escape_control(line));
            }
        }
        return Ok(print_quiet_on_closed_pipe(&out));
    }
    if !is_known {
        return Err(unknown_tool(&args.name, &known));
    }
    Err(Error::new(ErrorKind::Manifest, format!("no build has resolved the tool `{}` yet", crate::text::echo(&args.name)))
        .detail(format!("looked in: {}", looked.join("; ")))
        .help("run `cargo mcpp build` (or `cargo build`) first, with the same --profile/--release/--target/--target-dir"))
}

/// Write `text` to stdout; a reader that closed the pipe (`cargo mcpp why tool X | head -1`)
/// ends the command quietly and successfully, as a closed pipe does for `cat` (no panic, no
/// message). Any other write error is reported on stderr and answers the failure exit code.
fn print_quiet_on_closed_pipe(text: &str) -> i32 {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => exit_code::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit_code::SUCCESS,
        Err(e) => {
            eprintln!("error: could not write to stdout: {e}");
            exit_code::IO
        }
    }
}

/// The tools the resolver records decisions for: every rule's, and the host tools the `cc`
/// crate chooses and nvcc's host compiler (recorded through [`crate::tool::resolve_at`]).
fn known_tools() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = crate::rules::registry()
        .iter()
        .flat_map(|r| r.tools().iter().map(|t| t.name))
        .collect();
    for t in [
        crate::rules::cxx::HOST_CXX.name,
        crate::rules::host::WRAPPER.name,
    ] {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The refusal of `name`, which no rule runs: the tools they do.
fn unknown_tool(name: &str, known: &[&str]) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!("`{}` is no tool of any rule", crate::text::echo(name)),
    )
    .detail(format!("the tools the rules run: {}", known.join(", ")))
    .help("ask for one of those, spelled as listed (e.g. `cargo mcpp why tool glslangValidator`)")
}
