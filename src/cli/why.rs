//! `cargo mcpp why tool <name>`: print the resolver's recorded decision for a tool (the
//! program, its version, where it came from, what was consulted before it, the refusal) from
//! the device cache of the selected packages' last build.

use super::locate::locate;
use super::WhyToolArgs;
use crate::error::{exit_code, Error, ErrorKind, Result};
use crate::layout::DeviceCache;

/// Print the decision for `args.name` from the first selected package that recorded one.
///
/// # Errors
/// [`ErrorKind::Manifest`] when no build recorded the tool, naming the files looked in.
pub fn why_tool(args: &WhyToolArgs) -> Result<i32> {
    let located = locate(&args.location, &args.selection)?;
    let mut looked = Vec::new();
    for (package, _) in &located.packages {
        let cache = DeviceCache::in_profile(&located.profile_path, package);
        let all = crate::tool::read_decisions(&cache);
        let file = cache.tool_decisions();
        let Some(d) = all.get(&args.name) else {
            looked.push(format!("{} (recorded: {})", file.display(), if all.is_empty() { "nothing".to_string() } else { all.keys().cloned().collect::<Vec<_>>().join(", ") }));
            continue;
        };
        println!("{} for package {package} (recorded in {})", d.tool, file.display());
        match &d.answer {
            Some(a) => println!("  answer:  {}", a.display()),
            None => println!("  answer:  none"),
        }
        if let Some(v) = &d.version {
            println!("  version: {v}");
        }
        println!("  source:  {}", d.source);
        println!("  from:    {}", d.origin);
        if let Some(root) = &d.toolkit {
            println!("  toolkit: {}", root.display());
            if let Some(o) = &d.toolkit_origin {
                println!("    from:  {o}");
            }
        }
        if !d.considered.is_empty() {
            println!("  considered before it:");
            for c in &d.considered {
                println!("    {c}");
            }
        }
        if let Some(w) = &d.warning {
            println!("  warning: {w}");
        }
        if let Some(r) = &d.refusal {
            println!("  refused:");
            for line in r.lines() {
                println!("    {line}");
            }
        }
        return Ok(exit_code::SUCCESS);
    }
    Err(Error::new(ErrorKind::Manifest, format!("no build has resolved the tool `{}` yet", args.name))
        .detail(format!("looked in: {}", looked.join("; ")))
        .help("run `cargo mcpp build` (or `cargo build`) first, with the same --profile/--release/--target/--target-dir"))
}
