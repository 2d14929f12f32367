//! The CUDA rule's command lines: one translation unit's argv on either route ([`argv`]), the
//! `-gencode` list and nvcc's host-compiler arguments, and the checks that keep a value out
//! of the shell nvcc runs its sub-steps through ([`check_nvcc_shell_safe`]) or out of a build
//! that would fail to link (a relocatable-device-code flag without `rdc = true`, [`rdc_flag`]).

use super::{CudaCompilerName, CudaOptions, MANIFEST_KEY};
use crate::error::{Error, ErrorKind, Result};
use crate::rules::DeviceSource;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The index of the first entry of `flags` that turns relocatable device code on, as nvcc
/// reads it: `-rdc=true`, `--relocatable-device-code=true`, `-rdc true`,
/// `--relocatable-device-code true`, `-dc`, `--device-c`. nvcc accepts only `true`/`false`
/// there (`-rdc=1` is nvcc's own error), so only `true` counts. The value of an option that
/// passes arguments on (`-Xcompiler -dc`) is not nvcc's.
pub fn rdc_flag(flags: &[String]) -> Option<usize> {
    let is_rdc = |f: &str| f == "-rdc" || f == "--relocatable-device-code";
    flags.iter().enumerate().find_map(|(i, f)| {
        if passed_on(flags, i) {
            return None;
        }
        let on = match f.split_once('=') {
            Some((k, v)) => is_rdc(k) && v == "true",
            None => (is_rdc(f) && flags.get(i + 1).is_some_and(|v| v == "true")) || f == "-dc" || f == "--device-c",
        };
        on.then_some(i)
    })
}

/// The options whose next argument is handed to another program (the host compiler, ptxas,
/// nvlink, ...), on either route: that argument is not the compiler's own.
const PASS_ON: &[&str] = &[
    "-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xnvlink", "--nvlink-options", "-Xlinker", "--linker-options", "-Xarchive", "--archive-options", "-Xfatbin",
    "--fatbin-options", "-Xclang", "-Xarch_device", "-Xarch_host", "-Xcuda-ptxas", "-Xcuda-fatbinary", "-mllvm",
];

/// Whether `flags[i]` is the value of an option that passes it on ([`PASS_ON`]).
fn passed_on(flags: &[String], i: usize) -> bool {
    i > 0 && PASS_ON.contains(&flags[i - 1].as_str())
}

/// A flag that changes what the compiler writes, which the `output` key (or `rdc`) decides
/// instead, with the way out for each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputKindFlag {
    /// Its index in `flags`.
    pub index: usize,
    /// What it makes the compiler write instead of the planned output.
    pub writes: &'static str,
    /// The way out.
    pub instead: &'static str,
}

/// The first entry of `flags` that changes the kind of file the compiler writes on `route`
/// (nvcc: `--ptx`/`-ptx`, `-cubin`, `-fatbin`, `-optix-ir`, `-E`, `-M`, `-MM`, `-cuda`, `-lib`,
/// `-link`, `-dlink`, `-dw`, `-run`, and their long spellings; clang: `--cuda-device-only`,
/// `--cuda-host-only`, `-S`, `-E`, `-M`, `-MM`, `-emit-llvm`, `-fsyntax-only`). The action
/// names its output and checks it, and nvcc exits 0 writing PTX text into the object's place
/// under `--ptx`, so these are refused; `-dc` is [`rdc_flag`]'s. A value passed on
/// (`-Xcompiler -E`) is not the compiler's own.
pub fn output_kind_flag(route: CudaCompilerName, flags: &[String]) -> Option<OutputKindFlag> {
    const OUTPUT: &str = "set `output` in [package.metadata.mcpp.cuda] (\"ptx\", \"cubin\", \"fatbin\", or \"object\", the default), or for some files a `sources` entry `{ glob = \"...\", output = \"ptx\" }`, and remove the flag";
    const DEPFILE: &str = "remove the flag: cargo-mcpp writes the depfile itself (-MMD -MF on nvcc, -MD -MF on clang) alongside every compile";
    const LINK: &str = "remove the flag: the device link of relocatable device code is `rdc = true` in [package.metadata.mcpp.cuda], and the crate's link is cargo's";
    const NONE: &str = "remove the flag: cargo-mcpp compiles each source into the output its `output` key names";
    let nvcc: &[(&[&str], &str, &str)] = &[
        (&["--ptx", "-ptx"], "PTX text", OUTPUT),
        (&["-cubin", "--cubin"], "a cubin", OUTPUT),
        (&["-fatbin", "--fatbin"], "a fat binary", OUTPUT),
        (&["-optix-ir", "--optix-ir"], "OptiX IR", NONE),
        (&["-E", "--preprocess"], "preprocessed source", NONE),
        (&["-M", "--generate-dependencies", "-MM", "--generate-nonsystem-dependencies"], "a dependency list", DEPFILE),
        (&["-cuda", "--cuda"], "the host-side C++ translation", NONE),
        (&["-lib", "--lib", "-link", "--link", "-run", "--run"], "a library or an executable", LINK),
        (&["-dlink", "--device-link", "-dw", "--device-w"], "a device-linked object", LINK),
    ];
    let clang: &[(&[&str], &str, &str)] = &[
        (&["--cuda-device-only", "--cuda-host-only"], "one side of the compile", OUTPUT),
        (&["-S"], "assembly (PTX)", OUTPUT),
        (&["-E"], "preprocessed source", NONE),
        (&["-M", "-MM"], "a dependency list", DEPFILE),
        (&["-emit-llvm"], "LLVM IR", NONE),
        (&["-fsyntax-only"], "nothing", NONE),
    ];
    let table = match route {
        CudaCompilerName::Nvcc => nvcc,
        CudaCompilerName::Clang => clang,
    };
    flags.iter().enumerate().find_map(|(i, f)| {
        if passed_on(flags, i) {
            return None;
        }
        table.iter().find(|(names, _, _)| names.contains(&f.as_str())).map(|&(_, writes, instead)| OutputKindFlag { index: i, writes, instead })
    })
}

/// The characters nvcc's sub-steps would evaluate: nvcc runs its steps (preprocessor,
/// cudafe++, cicc, ptxas, the host compiler) through `sh`, each argument inside double quotes,
/// where `$` (expansion, `$(...)`), `` ` `` (command substitution), `"` and `\` keep their
/// meaning; a control character (a newline) ends the command.
pub const NVCC_SHELL_CHARS: &[char] = &['$', '`', '"', '\\'];

/// The first character of `value` that nvcc would hand to a shell to evaluate, if any.
pub fn nvcc_shell_char(value: &str) -> Option<char> {
    value.chars().find(|c| NVCC_SHELL_CHARS.contains(c) || c.is_control())
}

fn nvcc_shell_refusal(what: &str, c: char) -> Error {
    Error::new(ErrorKind::Manifest, format!("{what} contains {c:?}, which nvcc would evaluate in a shell; refused before nvcc runs"))
        .detail("nvcc runs its sub-steps through `sh` with each argument in double quotes, where `$(...)`, backticks, `$VAR`, `\"` and `\\` are interpreted: the value would run as a command or change.")
}

/// Refuse `value` (from `key`: a manifest key or where the value came from) when nvcc would
/// hand it to a shell to evaluate ([`NVCC_SHELL_CHARS`], control characters).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the manifest file, the key and the way out.
pub fn check_nvcc_shell_safe(value: &str, key: &str, manifest_path: &Path) -> Result<()> {
    match nvcc_shell_char(value) {
        None => Ok(()),
        Some(c) => Err(nvcc_shell_refusal(&format!("`{value}` ({key})"), c)
            .file(manifest_path)
            .key(key.to_string())
            .help("write the value without these characters (a define's value can be spelled in the source instead), or use compiler = \"clang\" in [package.metadata.mcpp.cuda], which runs no shell")),
    }
}

/// The variables nvcc reads for extra arguments of every run (NVIDIA's `NVCC_PREPEND_FLAGS`,
/// `NVCC_APPEND_FLAGS`): inputs of the compile, and values nvcc hands to its shell.
pub const NVCC_ENV_FLAGS: &[&str] = &["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"];

/// The nvcc route's manifest values and source names, checked with [`check_nvcc_shell_safe`].
pub fn check_nvcc_values(opts: &CudaOptions, sources: &[&DeviceSource], manifest_path: &Path) -> Result<()> {
    for (name, value) in &opts.common.defines {
        check_nvcc_shell_safe(value, &format!("{MANIFEST_KEY}.defines.{name}"), manifest_path)?;
    }
    for flag in &opts.common.flags {
        check_nvcc_shell_safe(flag, &format!("{MANIFEST_KEY}.flags"), manifest_path)?;
    }
    for dir in &opts.common.includes {
        check_nvcc_shell_safe(&dir.to_string_lossy(), &format!("{MANIFEST_KEY}.includes"), manifest_path)?;
    }
    if let Some(ccbin) = &opts.ccbin {
        check_nvcc_shell_safe(&ccbin.to_string_lossy(), &format!("{MANIFEST_KEY}.ccbin"), manifest_path)?;
    }
    for s in sources {
        if let Some(c) = nvcc_shell_char(&s.rel) {
            return Err(nvcc_shell_refusal(&format!("the source file name `{}`", s.rel), c)
                .file(&s.path)
                .key("package.metadata.mcpp.sources")
                .help("rename the file, or use compiler = \"clang\" in [package.metadata.mcpp.cuda], which runs no shell"));
        }
    }
    Ok(())
}

/// Every argument of an nvcc action, last: paths cargo-mcpp adds (the package directory, the
/// target directory, the toolkit) reach the shell too.
pub fn check_nvcc_argv(args: &[OsString], manifest_path: &Path) -> Result<()> {
    for a in args {
        let text = a.to_string_lossy();
        if let Some(c) = nvcc_shell_char(&text) {
            return Err(nvcc_shell_refusal(&format!("the nvcc argument `{text}`"), c)
                .file(manifest_path)
                .help("move the package, the target directory (CARGO_TARGET_DIR) or the toolkit to a path without these characters, or use compiler = \"clang\" in [package.metadata.mcpp.cuda], which runs no shell"));
        }
    }
    Ok(())
}

/// Everything the argv of one translation unit depends on.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The route.
    pub route: CudaCompilerName,
    /// The toolkit root (the clang route's `--cuda-path`).
    pub toolkit: &'a Path,
    /// nvcc's host compiler (nvcc route).
    pub ccbin: Option<&'a Path>,
    /// Arguments for the host compiler (those named with it in `CXX`), each passed as
    /// `-Xcompiler <arg>` (nvcc route; `-ccbin` takes a path only).
    pub ccbin_args: &'a [String],
    /// The toolkit's `targets/` directory of a cross target (`-target-dir`, nvcc route).
    pub target_dir: Option<&'a str>,
    /// The architectures, e.g. `["sm_80", "sm_90"]`.
    pub archs: &'a [String],
    /// The PTX architecture number (nvcc route).
    pub ptx: Option<u64>,
    /// Optimise (release) or not (debug: `-O0`, and no `-lineinfo`, whose file table nvcc
    /// writes with the checkout's absolute paths).
    pub optimize: bool,
    /// Relocatable device code.
    pub rdc: bool,
    /// The forced include (the island header), for the island's device half.
    pub force_include: Option<&'a Path>,
    /// Include directories (absolute).
    pub includes: &'a [PathBuf],
    /// Definitions.
    pub defines: &'a BTreeMap<String, String>,
    /// Extra flags, after the rule's own arguments and before the depfile, source and output ones.
    pub flags: &'a [String],
}

/// The gencode arguments (nvcc): one `-gencode arch=compute_N,code=sm_N` per architecture,
/// then the PTX one.
pub fn gencode_args(archs: &[String], ptx: Option<u64>) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    for arch in archs {
        let suffix = arch.strip_prefix("sm_").unwrap_or(arch);
        a.push("-gencode".into());
        a.push(format!("arch=compute_{suffix},code=sm_{suffix}").into());
    }
    if let Some(p) = ptx {
        a.push("-gencode".into());
        a.push(format!("arch=compute_{p},code=compute_{p}").into());
    }
    a
}

/// nvcc's host-compiler and target arguments: `-ccbin <path>`, `-target-dir <dir>` for a
/// cross target, then `-Xcompiler <arg>` for each argument named with the host compiler.
pub fn host_compiler_args(ccbin: Option<&Path>, ccbin_args: &[String], target_dir: Option<&str>) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    if let Some(cc) = ccbin {
        a.extend(["-ccbin".into(), cc.into()]);
    }
    if let Some(d) = target_dir {
        a.extend(["-target-dir".into(), d.into()]);
    }
    for arg in ccbin_args {
        a.extend(["-Xcompiler".into(), arg.into()]);
    }
    a
}

/// The arguments (after the program) that compile `src` to `obj` writing `depfile`.
pub fn argv(inv: &Invocation, src: &Path, obj: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    match inv.route {
        CudaCompilerName::Nvcc => {
            a.extend(host_compiler_args(inv.ccbin, inv.ccbin_args, inv.target_dir));
            a.extend(gencode_args(inv.archs, inv.ptx));
            a.extend(["-Xcompiler".into(), "-fPIC".into()]);
            if inv.optimize {
                a.push("-O3".into());
            } else {
                a.push("-O0".into());
            }
            if inv.rdc {
                a.push("-rdc=true".into());
            }
        }
        CudaCompilerName::Clang => {
            a.extend(["-x".into(), "cuda".into()]);
            let mut p = OsString::from("--cuda-path=");
            p.push(inv.toolkit);
            a.push(p);
            for arch in inv.archs {
                a.push(format!("--cuda-gpu-arch={arch}").into());
            }
            // PTX for the portable floor only, as on the nvcc route (clang's default embeds
            // PTX for every architecture).
            if let Some(p) = inv.ptx {
                let floor = format!("sm_{p}");
                if !inv.archs.contains(&floor) {
                    a.push(format!("--cuda-gpu-arch={floor}").into());
                }
                a.push("--no-cuda-include-ptx=all".into());
                a.push(format!("--cuda-include-ptx={floor}").into());
            }
            a.extend(["-Wno-unknown-cuda-version".into(), "-fPIC".into()]);
            a.push(if inv.optimize { "-O3" } else { "-O0" }.into());
        }
    }
    if let Some(h) = inv.force_include {
        a.extend(crate::surface::island::emit::force_include_args(h, false));
    }
    a.extend(crate::rules::host::include_define_args(inv.includes, inv.defines));
    a.extend(inv.flags.iter().map(OsString::from));
    match inv.route {
        CudaCompilerName::Nvcc => a.extend(["-MMD".into(), "-MF".into(), depfile.into()]),
        CudaCompilerName::Clang => a.extend(["-MD".into(), "-MF".into(), depfile.into()]),
    }
    a.extend(["-c".into(), src.into(), "-o".into(), obj.into()]);
    a
}

/// What a device-only compile writes ([`device_argv`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceOnly<'a> {
    /// PTX text for one virtual architecture (`compute_80`): nvcc `-arch=compute_80 --ptx`,
    /// clang `--cuda-device-only --cuda-gpu-arch=sm_80 -S`.
    Ptx(&'a str),
    /// A cubin (ELF) for one real architecture (`sm_90`): nvcc `-gencode
    /// arch=compute_90,code=sm_90 -cubin`, clang `--cuda-device-only --cuda-gpu-arch=sm_90 -c`.
    Cubin(&'a str),
    /// A fat binary with every architecture of the invocation and the PTX floor: nvcc
    /// `-gencode ... -fatbin` (not offered on clang, whose driver writes a fat binary only
    /// inside a host object).
    Fatbin,
}

/// The arguments (after the program) that compile `src` device-only into `out` as `what`,
/// writing `depfile`: the route's architecture and mode flags, optimisation (as [`argv`]),
/// `-I`/`-D`, `flags`, the depfile flags, `<src> -o <out>`. No forced include (the island's
/// device half is an object) and no `-fPIC` (no host code).
pub fn device_argv(inv: &Invocation, what: DeviceOnly, src: &Path, out: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    fn suffix(arch: &str) -> &str {
        arch.strip_prefix("sm_").or_else(|| arch.strip_prefix("compute_")).unwrap_or(arch)
    }
    match inv.route {
        CudaCompilerName::Nvcc => {
            a.extend(host_compiler_args(inv.ccbin, inv.ccbin_args, inv.target_dir));
            match what {
                DeviceOnly::Ptx(virt) => a.extend([format!("-arch=compute_{}", suffix(virt)).into(), "--ptx".into()]),
                DeviceOnly::Cubin(arch) => {
                    let n = suffix(arch);
                    a.extend(["-gencode".into(), format!("arch=compute_{n},code=sm_{n}").into(), "-cubin".into()]);
                }
                DeviceOnly::Fatbin => {
                    a.extend(gencode_args(inv.archs, inv.ptx));
                    a.push("-fatbin".into());
                }
            }
            if inv.optimize {
                a.push("-O3".into());
            } else {
                a.push("-O0".into());
            }
        }
        CudaCompilerName::Clang => {
            a.extend(["-x".into(), "cuda".into()]);
            let mut p = OsString::from("--cuda-path=");
            p.push(inv.toolkit);
            a.push(p);
            a.push("--cuda-device-only".into());
            match what {
                DeviceOnly::Ptx(arch) => a.extend([format!("--cuda-gpu-arch=sm_{}", suffix(arch)).into(), "-S".into()]),
                DeviceOnly::Cubin(arch) => a.extend([format!("--cuda-gpu-arch=sm_{}", suffix(arch)).into(), "-c".into()]),
                DeviceOnly::Fatbin => {}
            }
            a.push("-Wno-unknown-cuda-version".into());
            a.push(if inv.optimize { "-O3" } else { "-O0" }.into());
        }
    }
    a.extend(crate::rules::host::include_define_args(inv.includes, inv.defines));
    a.extend(inv.flags.iter().map(OsString::from));
    match inv.route {
        CudaCompilerName::Nvcc => a.extend(["-MMD".into(), "-MF".into(), depfile.into()]),
        CudaCompilerName::Clang => a.extend(["-MD".into(), "-MF".into(), depfile.into()]),
    }
    a.extend([src.into(), "-o".into(), out.into()]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdc_flags_are_found_in_every_spelling_nvcc_reads_as_true() {
        let f = |v: &[&str]| rdc_flag(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        for on in [&["-rdc=true"][..], &["--relocatable-device-code=true"], &["-dc"], &["--device-c"], &["-rdc", "true"], &["--relocatable-device-code", "true"]] {
            assert_eq!(f(on), Some(0), "{on:?}");
        }
        assert_eq!(f(&["-lineinfo", "--use_fast_math", "-rdc=true"]), Some(2));
        assert_eq!(f(&["-Xptxas", "-v", "-rdc", "true"]), Some(2), "the index of the flag, not its value");
        for off in [&["-rdc=false"][..], &["-rdc", "false"], &["-rdc=1"], &["-Xcompiler", "-dc"], &["--use_fast_math"], &["-rdc"], &[]] {
            assert_eq!(f(off), None, "{off:?}");
        }
    }

    #[test]
    fn flags_that_change_the_output_kind_are_found_per_route_and_not_when_passed_on() {
        let v = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for f in ["--ptx", "-ptx", "-cubin", "-fatbin", "-E", "-M", "-MM", "-dlink", "-lib", "--generate-dependencies"] {
            assert_eq!(output_kind_flag(CudaCompilerName::Nvcc, &v(&["-lineinfo", f])).map(|k| k.index), Some(1), "{f}");
        }
        assert_eq!(output_kind_flag(CudaCompilerName::Nvcc, &v(&["--ptx"])).unwrap().writes, "PTX text");
        assert!(output_kind_flag(CudaCompilerName::Nvcc, &v(&["-Xcompiler", "-E", "--use_fast_math", "-dc"])).is_none(), "a passed-on value, and -dc (rdc's)");
        assert!(output_kind_flag(CudaCompilerName::Nvcc, &v(&["-S"])).is_none());
        for f in ["--cuda-device-only", "-S", "-emit-llvm", "-E"] {
            assert!(output_kind_flag(CudaCompilerName::Clang, &v(&[f])).is_some(), "{f}");
        }
        assert!(output_kind_flag(CudaCompilerName::Clang, &v(&["-Xclang", "-S", "-ffast-math"])).is_none());
    }

    #[test]
    fn host_compiler_args_name_the_compiler_the_target_dir_and_its_arguments() {
        let a: Vec<String> = host_compiler_args(Some(Path::new("/usr/bin/aarch64-linux-gnu-g++")), &["-DFROM_ENV=1".into(), "-O1".into()], Some("sbsa-linux"))
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(a, ["-ccbin", "/usr/bin/aarch64-linux-gnu-g++", "-target-dir", "sbsa-linux", "-Xcompiler", "-DFROM_ENV=1", "-Xcompiler", "-O1"]);
    }
}
