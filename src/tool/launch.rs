//! How a compiler is started through its launcher ([`crate::rules::launcher`]): the compiler name a
//! launcher is matched by, and the settings cargo-mcpp gives ccache through the environment of
//! the launcher's process ([`ccache_env`], applied by [`crate::engine::graph`] where it starts
//! `<launcher> <compiler> <args>`). Below both, so the graph and the launcher read one
//! definition.

use std::path::Path;

/// The compilers a C/C++/CUDA launcher understands, by program file name (a version suffix such
/// as `-19` and a target prefix such as `aarch64-linux-gnu-` taken off first).
pub(crate) const C_FAMILY: &[&str] = &["cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "nvc", "nvc++", "hipcc", "icpx", "icx"];

/// The compiler name of `program`: its file name without `.exe`, a trailing `-<digits>` version
/// and a leading target triple (`aarch64-linux-gnu-g++-12` -> `g++`).
pub fn compiler_name(program: &Path) -> String {
    let file = program.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let file = file.strip_suffix(".exe").unwrap_or(&file).to_string();
    let unversioned = match file.rsplit_once('-') {
        Some((head, tail)) if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit() || c == '.') => head.to_string(),
        _ => file,
    };
    C_FAMILY.iter().find(|c| unversioned == **c || unversioned.ends_with(&format!("-{c}"))).map(|c| (*c).to_string()).unwrap_or(unversioned)
}

/// The settings cargo-mcpp gives ccache for one compile, as environment variables of the
/// launcher's process only (never in [`crate::tool::Tool::env`], so never in a fingerprint: none of them
/// changes the compiler's bytes, only how ccache finds them). `args` are the compiler's
/// arguments, `cwd` the directory the compile runs in (the package root), and `is_set` says
/// whether the user already set a variable in the environment: the user's own value wins.
///
/// - `CCACHE_BASEDIR=<cwd>`: ccache rewrites the absolute paths under the package root in the
///   argv to relative ones before hashing, so two checkouts at different paths share entries.
/// - `CCACHE_NOHASHDIR=1` when the argv carries nvcc's `-gencode` and no flag that writes debug
///   or line information: ccache reads every argument that starts with `-g` as a debug flag and
///   then hashes the working directory, which would split the cache per checkout although the
///   object names no directory. With `-g`, `-G` or `-lineinfo` the object does name it, and
///   ccache keeps hashing it.
/// - `CCACHE_DEPEND=1` when the argv writes a depfile (`-MD`/`-MMD`, as every cargo-mcpp
///   compile does): ccache's depend mode takes the headers from that depfile, so a miss never
///   runs the preprocessor a second time (for nvcc, `nvcc -E`).
///
/// Empty for any other launcher.
pub(crate) fn ccache_env(launcher: &Path, args: &[std::ffi::OsString], cwd: &Path, is_set: impl Fn(&str) -> bool) -> Vec<(&'static str, std::ffi::OsString)> {
    if compiler_name(launcher) != "ccache" {
        return Vec::new();
    }
    let args: Vec<std::borrow::Cow<str>> = args.iter().map(|a| a.to_string_lossy()).collect();
    let mut env = Vec::new();
    if !is_set("CCACHE_BASEDIR") {
        env.push(("CCACHE_BASEDIR", cwd.as_os_str().to_os_string()));
    }
    let gencode = args.iter().any(|a| a == "-gencode" || a.starts_with("-gencode="));
    let debug_flag = |a: &str| {
        matches!(a, "-G" | "--debug" | "--device-debug" | "-lineinfo" | "--generate-line-info")
            || (a.starts_with("-g") && !a.starts_with("-gencode") && !a.starts_with("-gz") && !a.ends_with('0'))
    };
    // The host compiler's own flags count too, in either spelling (`-Xcompiler -g`, `-Xcompiler=-g,-O2`).
    let debug_info = args.iter().any(|a| {
        let host = a.strip_prefix("-Xcompiler=").or_else(|| a.strip_prefix("--compiler-options="));
        debug_flag(a) || host.is_some_and(|h| h.split(',').any(debug_flag))
    });
    if gencode && !debug_info && !is_set("CCACHE_HASHDIR") && !is_set("CCACHE_NOHASHDIR") {
        env.push(("CCACHE_NOHASHDIR", "1".into()));
    }
    let depfile = args.iter().any(|a| a == "-MD" || a == "-MMD");
    if depfile && !is_set("CCACHE_DEPEND") && !is_set("CCACHE_NODEPEND") {
        env.push(("CCACHE_DEPEND", "1".into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ccache_gets_base_dir_depend_mode_and_no_dir_hash_for_nvcc_without_debug_info() {
        let os = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let nvcc = os(&["-ccbin", "/usr/bin/g++", "-gencode", "arch=compute_80,code=sm_80", "-O3", "-MMD", "-MF", "/t/a.d", "-c", "/p/k/a.cu", "-o", "/t/a.o"]);
        let unset = |_: &str| false;
        let names = |env: Vec<(&'static str, std::ffi::OsString)>| env.into_iter().map(|(k, v)| format!("{k}={}", v.to_string_lossy())).collect::<Vec<_>>();
        assert_eq!(names(ccache_env(Path::new("/usr/bin/ccache"), &nvcc, Path::new("/p"), unset)), ["CCACHE_BASEDIR=/p", "CCACHE_NOHASHDIR=1", "CCACHE_DEPEND=1"]);
        // Line information names the directory: ccache keeps hashing it.
        let mut lineinfo = nvcc.clone();
        lineinfo.push("-lineinfo".into());
        assert_eq!(names(ccache_env(Path::new("ccache"), &lineinfo, Path::new("/p"), unset)), ["CCACHE_BASEDIR=/p", "CCACHE_DEPEND=1"]);
        let mut host_g = nvcc.clone();
        host_g.push("-Xcompiler=-fPIC,-g".into());
        assert_eq!(names(ccache_env(Path::new("ccache"), &host_g, Path::new("/p"), unset)), ["CCACHE_BASEDIR=/p", "CCACHE_DEPEND=1"]);
        // clang's CUDA route and the host compilers: no `-gencode`, nothing to correct.
        let clang = os(&["-x", "cuda", "--cuda-gpu-arch=sm_80", "-O3", "-MD", "-MF", "/t/a.d", "-c", "/p/k/a.cu", "-o", "/t/a.o"]);
        assert_eq!(names(ccache_env(Path::new("ccache"), &clang, Path::new("/p"), unset)), ["CCACHE_BASEDIR=/p", "CCACHE_DEPEND=1"]);
        // The user's own settings win; another launcher gets nothing.
        let set = |k: &str| k == "CCACHE_BASEDIR" || k == "CCACHE_HASHDIR" || k == "CCACHE_NODEPEND";
        assert!(ccache_env(Path::new("ccache"), &nvcc, Path::new("/p"), set).is_empty());
        assert!(ccache_env(Path::new("/x/sccache"), &nvcc, Path::new("/p"), unset).is_empty());
    }
}
