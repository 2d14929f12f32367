//! What the CUDA rule asks of the machine and of its compiler: the architectures to compile
//! for (the accelerator entry's list, `{native}` probed with `nvidia-smi`), the PTX floor, the
//! architectures the compiler accepts ([`KnownArchs`], asked once and cached), and the driver
//! floor (libcuda's `cuDriverGetVersion`). Probes are facts, never refusals by themselves: the fact
//! channel ([`crate::engine::facts`]) compares a fact with its floor and names both.

use super::CudaCompilerName;
use crate::config::accel::arch_number;
use crate::config::env::Env;
use crate::engine::facts;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::layout::DeviceCache;
use crate::tool::{self, Tool};
use std::path::Path;

/// What the entry compiles for: the architectures and the PTX (portable) architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archs {
    /// The architectures, e.g. `["sm_80", "sm_90"]` (`{native}` replaced by the probed ones).
    pub archs: Vec<String>,
    /// The PTX architecture number ([`ptx_arch`]).
    pub ptx: Option<u64>,
}

/// The architectures and PTX floor of the CUDA accelerator entry `entry`: its version must name
/// a minor (`cuda13.0`), `{native}` (or no list) is probed ([`resolve_archs`]), and the floor
/// may not be above every listed architecture.
///
/// # Errors
/// [`ErrorKind::Accel`] for each of those, unkeyed: the rule keys it where the set came from ([`crate::rules::RuleContext::accel_key`]).
pub fn entry_archs(entry: &crate::config::accel::AccelEntry, env: &Env) -> Result<Archs> {
    let accel_text = entry.to_string();
    check_entry_version(entry)?;
    let archs = resolve_archs(&entry.archs, &accel_text, env)?;
    let ptx = ptx_arch(&archs, entry.floor.as_deref());
    let highest = archs.iter().filter_map(|a| arch_number(a)).max();
    if let (Some(f), Some(h)) = (entry.floor.as_deref().and_then(arch_number), highest) {
        if f > h {
            return Err(Error::new(ErrorKind::Accel, format!("the PTX floor of `{accel_text}` (compute_{f}) is above every listed architecture (highest sm_{h})"))
                .detail("The floor names the architecture the portable PTX is generated for; it must be one the entry compiles for or an older one,")
                .detail("or GPUs between the listed ones and the floor would get neither SASS nor PTX they can run.")
                .help(format!("lower the floor (e.g. ptx>={h}), or list sm_{f} among the architectures")));
        }
    }
    Ok(Archs { archs, ptx })
}

/// The version of the CUDA entry `entry`, when written, names a minor (`cuda13.0`, not
/// `cuda13`): checked for the whole accelerator set before anything runs
/// ([`crate::rules::Rule::check_entry`]), and again here.
///
/// # Errors
/// [`ErrorKind::Accel`] naming the fix, unkeyed (as [`entry_archs`]).
pub fn check_entry_version(entry: &crate::config::accel::AccelEntry) -> Result<()> {
    match entry.version.as_deref().filter(|v| !v.contains('.')) {
        Some(v) => Err(Error::new(ErrorKind::Accel, format!("`{entry}` names CUDA {v} without a minor version"))
            .detail("A CUDA version is major.minor: the entry is checked against the toolkit's, and 13 alone would match any 13.x.")
            .help(format!("write cuda{v}.0 (or the minor of your toolkit), in `accel` or `--accel`"))),
        None => Ok(()),
    }
}

/// The architectures to compile for: the entry's list, with `native` (or an absent list)
/// replaced by the compute capabilities `nvidia-smi` reports on this machine.
///
/// # Errors
/// [`ErrorKind::Accel`] when `native`/no list meets a machine without an NVIDIA GPU (naming the
/// key to set), or an architecture is not a CUDA one (`sm_XX`, `sm_XXa`, `sm_XXf`).
pub fn resolve_archs(archs: &[String], accel_text: &str, env: &Env) -> Result<Vec<String>> {
    let wants_native = archs.is_empty() || archs.iter().any(|a| a == "native");
    let mut out: Vec<String> = archs.iter().filter(|a| *a != "native").cloned().collect();
    if wants_native {
        let probed = probe_gpu_archs(env);
        if probed.is_empty() {
            return Err(Error::new(ErrorKind::Accel, format!("the accelerator entry `{accel_text}` asks for the GPUs of this machine, and it has no NVIDIA GPU"))
                .detail("`{native}` (or no architecture list) means \"the compute capabilities nvidia-smi reports here\";")
                .detail("nvidia-smi found none, and compiling for no architecture would give an empty or garbage -arch.")
                .help(format!("name the architectures: accel = \"cuda13.0+{{sm_90}}\" in [package.metadata.mcpp], or {}", crate::output::report::accel_way(env, "cuda13.0+{sm_80,sm_90}")))
                .help(format!("or build with {} for the host fallback", crate::output::report::no_accel_way(env))));
        }
        for a in probed {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    for a in &out {
        if !is_cuda_arch(a) {
            return Err(Error::new(ErrorKind::Accel, format!("`{}` in `{}` is not a CUDA architecture", crate::text::echo(a), crate::text::echo(accel_text)))
                .help("CUDA architectures are compute capabilities: sm_80, sm_89, sm_90, sm_90a, sm_100f, ..."));
        }
    }
    Ok(out)
}

/// The architectures the selected CUDA compiler accepts, known from the compiler itself
/// (a documented architecture a compiler may still reject): nvcc's `--list-gpu-code` (the `sm_N` it compiles for;
/// the arch-specific `sm_Na` exists from sm_90, the family `sm_Nf` from sm_100 with nvcc 12.9,
/// neither is listed), clang's `--target=nvptx64-nvidia-cuda --print-supported-cpus` (every
/// name listed, `sm_90a` included). Asked once per compiler file and cached
/// ([`tool::probe_cached`]); `None` when the program does not say it is nvcc or clang in its
/// version, or lists nothing (then nothing is checked here and the compiler has the last word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownArchs {
    /// The compiler, as named in messages (`nvcc 13.0`, `clang++`).
    pub compiler: String,
    /// The numbers of the plain `sm_N` names, ascending.
    pub numbers: Vec<u64>,
    /// Names accepted beyond `sm_N` (clang's `sm_90a`), sorted.
    pub extra: Vec<String>,
    /// nvcc's suffix rule: (`a` from this number, `f` from this number), `None` for clang.
    pub suffixes: Option<(u64, Option<u64>)>,
}

impl KnownArchs {
    /// Parse a list of `sm_...` words (nvcc's or clang's output); `None` when it has none.
    pub fn parse(compiler: &str, text: &str, suffixes: Option<(u64, Option<u64>)>) -> Option<KnownArchs> {
        let mut numbers = Vec::new();
        let mut extra = Vec::new();
        for w in text.split(|c: char| c.is_whitespace() || c == ',') {
            let Some(rest) = w.strip_prefix("sm_") else { continue };
            if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()) {
                if let Ok(n) = rest.parse() {
                    numbers.push(n);
                }
            } else if is_cuda_arch(w) {
                extra.push(w.to_string());
            }
        }
        numbers.sort_unstable();
        numbers.dedup();
        extra.sort();
        extra.dedup();
        (!numbers.is_empty()).then(|| KnownArchs { compiler: compiler.to_string(), numbers, extra, suffixes })
    }

    /// Whether `arch` (`sm_90`, `sm_90a`, `sm_100f`) is accepted: written canonically (no
    /// leading zero) and known to the compiler.
    pub fn accepts(&self, arch: &str) -> bool {
        if self.extra.iter().any(|e| e == arch) {
            return true;
        }
        let Some(rest) = arch.strip_prefix("sm_") else { return false };
        let (digits, suffix) = match rest.strip_suffix(['a', 'f']) {
            Some(d) => (d, rest.chars().last()),
            None => (rest, None),
        };
        if digits.is_empty() || digits.starts_with('0') || !digits.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        let Ok(n) = digits.parse::<u64>() else { return false };
        if !self.numbers.contains(&n) {
            return false;
        }
        match (suffix, self.suffixes) {
            (None, _) => true,
            (Some('a'), Some((a, _))) => n >= a,
            (Some('f'), Some((_, Some(f)))) => n >= f,
            _ => false,
        }
    }

    /// Whether `floor` (the text after `ptx>=`) names a virtual architecture the compiler
    /// generates PTX for: a plain number it lists, without a leading zero.
    pub fn accepts_floor(&self, floor: &str) -> bool {
        !floor.starts_with('0') && floor.chars().all(|c| c.is_ascii_digit()) && floor.parse::<u64>().is_ok_and(|n| self.numbers.contains(&n))
    }

    /// The accepted names, for messages: `sm_75 sm_80 ... (and sm_Na from sm_90, sm_Nf from sm_100)`.
    pub fn shown(&self) -> String {
        let mut s = self.numbers.iter().map(|n| format!("sm_{n}")).chain(self.extra.iter().cloned()).collect::<Vec<_>>().join(" ");
        match self.suffixes {
            Some((a, Some(f))) => s.push_str(&format!(" (and sm_Na from sm_{a}, sm_Nf from sm_{f})")),
            Some((a, None)) => s.push_str(&format!(" (and sm_Na from sm_{a})")),
            None => {}
        }
        s
    }
}

/// What the selected compiler accepts, asked of it once (cached): see [`KnownArchs`].
pub fn known_archs(route: CudaCompilerName, compiler: &Tool, cache: &DeviceCache) -> Option<KnownArchs> {
    match route {
        CudaCompilerName::Nvcc => {
            // Only a program that says it is nvcc is asked (a wrapper or a test shim is not).
            let line = compiler.version.lines().find(|l| l.contains("Cuda compilation tools"))?;
            let release = line.split("release ").nth(1)?.split(',').next()?.trim().to_string();
            let nums: Vec<u64> = release.split('.').filter_map(|p| p.parse().ok()).collect();
            let f_from = (nums.as_slice() >= [12, 9].as_slice()).then_some(100);
            let text = tool::probe_cached(compiler, &["--list-gpu-code"], cache)?;
            KnownArchs::parse(&format!("nvcc {release}"), &text, Some((90, f_from)))
        }
        CudaCompilerName::Clang => {
            if !compiler.version.contains("clang version") {
                return None;
            }
            let text = tool::probe_cached(compiler, &["--target=nvptx64-nvidia-cuda", "--print-supported-cpus"], cache)?;
            KnownArchs::parse(&compiler.name, &text, None)
        }
    }
}

/// Refuse an architecture or PTX floor the compiler would reject ("Unsupported gpu
/// architecture"), before anything compiles, with the column in the entry and what it accepts.
/// `listed` are the architectures written in the entry (a probed `{native}` one has no column).
///
/// # Errors
/// [`ErrorKind::Accel`] unkeyed (as [`entry_archs`]).
pub fn check_known_archs(entry: &crate::config::accel::AccelEntry, archs: &[String], known: &KnownArchs) -> Result<()> {
    let text = entry.to_string();
    let refuse = |what: String, column: Option<usize>| {
        let mut e = Error::new(ErrorKind::Accel, what);
        if let Some(c) = column {
            let (shown, caret) = crate::text::echo_window(&text, c - 1);
            e = e.detail(shown).detail(format!("{}^ column {c}", " ".repeat(caret)));
        }
        e.detail(format!("{} accepts: {}", known.compiler, known.shown())).help("write one of those in `accel` (or --accel / MCPP_ACCEL), or use a toolkit that knows it")
    };
    for a in archs {
        if known.accepts(a) {
            continue;
        }
        let column = entry.archs.iter().position(|x| x == a).map(|k| {
            let head = text.find("+{").map(|i| i + 2).unwrap_or(0);
            head + entry.archs[..k].iter().map(|x| x.chars().count() + 1).sum::<usize>() + 1
        });
        let from = if column.is_some() { String::new() } else { " (reported by nvidia-smi for this machine)".to_string() };
        return Err(refuse(format!("`{}` in `{}` is not an architecture {} compiles for{from}", crate::text::echo(a), crate::text::echo(&text), known.compiler), column));
    }
    if let (Some(floor), Some(word)) = (&entry.floor, entry.floor_word) {
        if !known.accepts_floor(floor) {
            let w = if word == crate::config::accel::FloorWord::Ptx { "ptx" } else { "floor" };
            let column = text.rfind(">=").map(|i| text[..i + 2].chars().count() + 1);
            return Err(refuse(format!("`{w}>={}` in `{}` names no virtual architecture {} generates PTX for", crate::text::echo(floor), crate::text::echo(&text), known.compiler), column));
        }
    }
    Ok(())
}

/// `sm_<digits>` with an optional `a`/`f` suffix.
pub fn is_cuda_arch(a: &str) -> bool {
    let Some(rest) = a.strip_prefix("sm_") else { return false };
    let digits = rest.trim_end_matches(['a', 'f']);
    !digits.is_empty() && digits.len() + 1 >= rest.len() && digits.chars().all(|c| c.is_ascii_digit())
}

/// The compute capabilities of this machine's GPUs as `sm_XX`, from
/// `nvidia-smi --query-gpu=compute_cap --format=csv,noheader`; empty when nvidia-smi is absent,
/// fails, or lists nothing.
pub fn probe_gpu_archs(env: &Env) -> Vec<String> {
    let Some(smi) = tool::find_on_path("nvidia-smi", env) else { return Vec::new() };
    let Some(stdout) = tool::probe(&smi, &["--query-gpu=compute_cap", "--format=csv,noheader"]) else { return Vec::new() };
    let mut archs = Vec::new();
    for line in stdout.lines() {
        let digits: String = line.trim().chars().filter(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && line.trim().contains('.') {
            let a = format!("sm_{digits}");
            if !archs.contains(&a) {
                archs.push(a);
            }
        }
    }
    archs
}

/// The portable (PTX) architecture number: the floor (`ptx>=90`, `floor>=sm_90`) when given,
/// else the highest architecture's number.
pub fn ptx_arch(archs: &[String], floor: Option<&str>) -> Option<u64> {
    floor.and_then(arch_number).or_else(|| archs.iter().filter_map(|a| arch_number(a)).max())
}

/// The CUDA version of the installed driver as (major, minor), through libcuda's
/// `cuDriverGetVersion`; `None` where no driver library loads (no fact is stated then).
pub fn probe_driver_version() -> Option<(u32, u32)> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::c_int;
        static DRIVER: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
        *DRIVER.get_or_init(|| {
            // SAFETY: loading libcuda runs its initialisers, which expect nothing of the caller;
            // the symbol, when found, is libcuda's `CUresult cuDriverGetVersion(int*)` (the
            // type written here), called with a valid pointer while the library is loaded. The
            // library is then left loaded for the life of the process (unloading a GPU driver
            // library is not something its vendor supports).
            unsafe {
                let lib = libloading::Library::new("libcuda.so.1").ok()?;
                let v = {
                    let f: libloading::Symbol<unsafe extern "C" fn(*mut c_int) -> c_int> = lib.get(b"cuDriverGetVersion\0").ok()?;
                    let mut v: c_int = 0;
                    if f(&mut v) != 0 || v <= 0 {
                        return None;
                    }
                    v
                };
                std::mem::forget(lib);
                Some(((v / 1000) as u32, ((v % 1000) / 10) as u32))
            }
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The driver floor, through the fact channel ([`crate::engine::facts`]): the fact
/// `cuda-driver` (the CUDA version this machine's driver supports, [`probe_driver_version`])
/// must have a major version at least the toolkit's (minor versions within one major are
/// compatible). No toolkit version or no driver: nothing is stated or refused.
///
/// # Errors
/// [`ErrorKind::Accel`] naming both versions and the toolkit, in the channel's one shape.
pub fn check_driver_floor(toolkit: Option<(u32, u32)>, env: &crate::config::env::Env, driver: impl FnOnce() -> Option<(u32, u32)>, toolkit_root: &Path) -> Result<()> {
    let Some(t) = toolkit else { return Ok(()) };
    let floor = driver_floor(t, toolkit_root);
    let read = || driver().map(|(a, b)| facts::Reading { version: facts::Version(vec![a.into(), b.into()]), source: "libcuda.so.1, cuDriverGetVersion".into() });
    facts::require(&floor, env, read).map(|_| ())
}

/// The floor a CUDA toolkit of version `t` at `root` puts on the driver.
fn driver_floor(t: (u32, u32), root: &Path) -> facts::Floor {
    facts::Floor {
        fact: "cuda-driver",
        what: "the CUDA version this machine's driver supports",
        relation: facts::Relation::MajorAtLeast,
        version: facts::Version(vec![t.0.into(), t.1.into()]),
        needed_by: format!("the CUDA toolkit {}.{}", t.0, t.1),
        why: "A runtime of a newer major version than the driver's fails at its first call (cudaErrorInsufficientDriver), so this is refused before compiling.".into(),
        help: "use a CUDA toolkit of the driver's major version ([package.metadata.mcpp.cuda] toolkit or CUDA_PATH), or update the driver".into(),
        file: Some(root.to_path_buf()),
        key: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_architectures_and_ptx() {
        assert!(is_cuda_arch("sm_90") && is_cuda_arch("sm_90a") && is_cuda_arch("sm_100f"));
        assert!(!is_cuda_arch("gfx942") && !is_cuda_arch("sm_") && !is_cuda_arch("sm_9x0") && !is_cuda_arch("native"));
        let archs = vec!["sm_80".to_string(), "sm_90".to_string()];
        assert_eq!(ptx_arch(&archs, None), Some(90));
        assert_eq!(ptx_arch(&archs, Some("80")), Some(80));
        let g: Vec<String> = super::super::argv::gencode_args(&archs, Some(90)).iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(g, ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"]);
    }

    /// What nvcc 13.0 and clang 19 print, checked against what they do (measured with the
    /// installed tools: `nvcc -gencode arch=compute_X,code=sm_X` accepts 90a, 100a, 100f, 120a,
    /// 121f and rejects 80a, 90f, 8, 080, 99, 70).
    #[test]
    fn known_architectures_follow_the_compilers_lists() {
        let nvcc = KnownArchs::parse("nvcc 13.0", "sm_75\nsm_80\nsm_86\nsm_87\nsm_88\nsm_89\nsm_90\nsm_100\nsm_110\nsm_103\nsm_120\nsm_121\n", Some((90, Some(100)))).unwrap();
        for ok in ["sm_75", "sm_80", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103f", "sm_120a", "sm_121f"] {
            assert!(nvcc.accepts(ok), "{ok}");
        }
        for bad in ["sm_80a", "sm_90f", "sm_8", "sm_080", "sm_99", "sm_70", "sm_", "compute_90", "sm_1000000000000000000000"] {
            assert!(!nvcc.accepts(bad), "{bad}");
        }
        assert!(nvcc.accepts_floor("80") && nvcc.accepts_floor("120"));
        for bad in ["0", "10", "85", "080", "8.5", "99"] {
            assert!(!nvcc.accepts_floor(bad), "{bad}");
        }
        let clang = KnownArchs::parse("clang++", "Available CPUs for this target:\n\tsm_20\n\tsm_89\n\tsm_90\n\tsm_90a\nUse -mcpu", None).unwrap();
        assert!(clang.accepts("sm_90a") && clang.accepts("sm_89") && !clang.accepts("sm_100") && !clang.accepts("sm_89a"));
        assert!(KnownArchs::parse("x", "recording shim 1.0", None).is_none());

        let entry = |s: &str| crate::config::accel::AccelSet::parse(s).unwrap().entries[0].clone();
        let e = entry("cuda13.0+{sm_90,sm_80a}");
        let err = check_known_archs(&e, &e.archs, &nvcc).unwrap_err().to_string();
        assert!(err.contains("`sm_80a` in `cuda13.0+{sm_90,sm_80a}` is not an architecture nvcc 13.0 compiles for"), "{err}");
        assert!(err.contains("^ column 17") && err.contains("nvcc 13.0 accepts: sm_75 sm_80") && err.contains("sm_Nf from sm_100"), "{err}");
        let e = entry("cuda13.0+{sm_90} ptx>=85");
        let err = check_known_archs(&e, &e.archs, &nvcc).unwrap_err().to_string();
        assert!(err.contains("`ptx>=85` in `cuda13.0+{sm_90} ptx>=85` names no virtual architecture nvcc 13.0 generates PTX for") && err.contains("column 23"), "{err}");
        let e = entry("cuda13.0+{sm_80,sm_90a} ptx>=80");
        assert!(check_known_archs(&e, &e.archs, &nvcc).is_ok());
    }

    #[test]
    fn driver_floor_refuses_a_newer_major_only() {
        let root = Path::new("/cuda");
        let env = crate::config::env::Env::empty();
        assert!(check_driver_floor(Some((13, 5)), &env, || Some((13, 0)), root).is_ok());
        assert!(check_driver_floor(Some((13, 0)), &env, || None, root).is_ok());
        let e = check_driver_floor(Some((13, 0)), &env, || Some((12, 8)), root).unwrap_err().to_string();
        assert!(e.contains("the CUDA version this machine's driver supports is 12.8 (libcuda.so.1, cuDriverGetVersion), and the CUDA toolkit 13.0 needs a major version of at least 13"), "{e}");
        assert!(e.contains("cudaErrorInsufficientDriver") && e.contains("/cuda"), "{e}");
        // The machine the program runs on, stated by hand: its driver decides.
        let mut env = crate::config::env::Env::empty();
        env.set("MCPP_FACT_CUDA_DRIVER", "13.0");
        assert!(check_driver_floor(Some((13, 0)), &env, || Some((12, 8)), root).is_ok());
    }

    #[test]
    fn native_without_a_gpu_is_refused_naming_the_way_out() {
        let mut env = Env::empty();
        env.set("PATH", "/nonexistent");
        let e = resolve_archs(&["native".to_string()], "cuda13.0+{native}", &env).unwrap_err().to_string();
        assert!(e.contains("has no NVIDIA GPU") && !e.contains("package.metadata.mcpp.accel"), "the rule keys it where the set came from: {e}");
        assert!(e.contains("nvidia-smi found none"), "{e}");
        let e = resolve_archs(&[], "cuda13.0", &env).unwrap_err().to_string();
        assert!(e.contains("has no NVIDIA GPU"), "{e}");
        assert_eq!(resolve_archs(&["sm_90".to_string()], "cuda13.0+{sm_90}", &env).unwrap(), ["sm_90"]);
    }
}
