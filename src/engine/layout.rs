//! The device cache's layout: every path cargo-mcpp reads or writes under
//! `target/<profile>/mcpp/<package>/`, named here and nowhere else. The package's cache
//! ([`DeviceCache`]) is computed once (by [`crate::Build::config`] from `OUT_DIR`, or by `cargo
//! mcpp why` from cargo metadata) and its variant ([`Variant`]) once per device phase, from the
//! accelerator set, then handed down to the resolver, the rules, the lanes, the action graph
//! and the surface.
//!
//! ```text
//! target/<profile>/mcpp/<package>/        DeviceCache (shared by every variant)
//!   tool-decisions.json                   the resolver's decisions (`cargo mcpp why tool`)
//!   tool-versions.json                    tool versions, keyed by the program file's stat data
//!   tool-probes.json                      what a tool accepts (`--help`, `--list-gpu-code`)
//!   host-toolchain.json, cc-probe/        the `cc` crate's host compiler choice
//!   island/                               the island's generated header, C++ module, Rust bindings
//!   <variant>/                            Variant: `host`, or 16 hex of sha256(accelerator set)
//!     lock                                one device phase at a time on this variant
//!     surface-base                        the base directory the last surface was named by
//!     fingerprints/                       one record per action, and file-hashes.json
//!     spirv/, slang/                      a lane's outputs (`<rel>.spv`, `<rel>.d`)
//!     cuda/, cxx/                         an object lane: obj/ (objects, depfiles),
//!                                         lib-<hash>/ (its archive; see crate::rules::link),
//!                                         for cuda ptx/, cubin/, fatbin/ (device-only
//!                                         payloads, `output`), for cxx bmi/ and module.map
//! ```
//!
//! Object and archive names inside a lane's directories are [`crate::rules::link`]'s. The on-disk
//! names are the interface of tests and of `cargo mcpp why`: they do not change.
//!
//! The surface directory (build.rs's `OUT_DIR`, what the crate `include!`s) is named here too
//! ([`OutDir`]): `mcpp_shaders.rs`, `mcpp_kernels.rs`, and `mcpp/` with the C++ surface, the
//! island's header and module, and `payloads/`.

use crate::config::accel::AccelSet;
use std::path::{Path, PathBuf};

/// The compilation database's file name, in each variant of the device cache and in the copies
/// `cargo mcpp build --compile-commands` writes.
pub const COMPILE_COMMANDS: &str = "compile_commands.json";

/// The directory beside a variant's `compile_commands.json` holding the empty stand-ins of the
/// headers clang's CUDA wrapper includes and a CUDA 13 toolkit lacks, named by the database's
/// clang entries of nvcc-route units ([`crate::engine::compile_db`]); read by clangd only.
pub const CLANGD_CUDA_STUBS: &str = "clangd-cuda-stubs";

/// The device cache of one package, `target/<profile>/mcpp/<package>/`: what every variant
/// shares (tool decisions, versions and probes, the host toolchain, the island).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCache {
    dir: PathBuf,
}

impl DeviceCache {
    /// The cache at `dir`, as given (e.g. [`crate::Build::work_dir`]).
    pub fn at(dir: impl Into<PathBuf>) -> DeviceCache {
        DeviceCache { dir: dir.into() }
    }

    /// The cache of `package` in a profile directory (`target/debug`, `target/<triple>/release`):
    /// `<profile_dir>/mcpp/<package>`. `cargo mcpp why` finds a build's records this way.
    pub fn in_profile(profile_dir: &Path, package: &str) -> DeviceCache {
        DeviceCache::at(profile_dir.join("mcpp").join(package))
    }

    /// The cache of `package` for a build script whose `OUT_DIR` is `out_dir`
    /// (`target/debug/build/<pkg>-<hash>/out`): [`DeviceCache::in_profile`] of the directory
    /// holding `build/`, so the build script and `cargo mcpp` name one place; `<out_dir>/mcpp-work`
    /// when `out_dir` is not under a `build` directory.
    pub fn from_out_dir(out_dir: &Path, package: &str) -> DeviceCache {
        let profile_dir = out_dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "build")).and_then(Path::parent);
        match profile_dir {
            Some(p) => DeviceCache::in_profile(p, package),
            None => DeviceCache::at(out_dir.join("mcpp-work")),
        }
    }

    /// The directory itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether `path` lies inside the cache (derived files: not watched by cargo).
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.dir)
    }

    /// `tool-decisions.json`: the last decision (or refusal) of the resolver for each tool
    /// ([`crate::tool::decisions`]), printed by `cargo mcpp why tool`.
    pub fn tool_decisions(&self) -> PathBuf {
        self.dir.join("tool-decisions.json")
    }

    /// `tool-versions.json`: each tool's version text, keyed by the program file's stat data.
    pub fn tool_versions(&self) -> PathBuf {
        self.dir.join("tool-versions.json")
    }

    /// `env-scripts.json`: the environment each rule's `env-script` set, keyed by the script's
    /// path, bytes, arguments and base variables ([`crate::tool::env_script`]).
    pub fn env_scripts(&self) -> PathBuf {
        self.dir.join("env-scripts.json")
    }

    /// `tool-probes.json`: what a tool printed for a probe (`--help`, `--list-gpu-code`), keyed
    /// by the program file's stat data and the arguments.
    pub fn tool_probes(&self) -> PathBuf {
        self.dir.join("tool-probes.json")
    }

    /// `whole-second-times-warned`: written once the build warned that the package's files
    /// have whole-second modification times ([`crate::engine::fingerprint::whole_second_warning`]).
    pub fn whole_second_marker(&self) -> PathBuf {
        self.dir.join("whole-second-times-warned")
    }

    /// `host-toolchain.json`: the `cc` crate's host compiler choice, keyed by what it reads.
    pub fn host_toolchain(&self) -> PathBuf {
        self.dir.join("host-toolchain.json")
    }

    /// `cc-probe/`: the `cc` crate's `out_dir` while it detects the compiler family.
    pub fn cc_probe_dir(&self) -> PathBuf {
        self.dir.join("cc-probe")
    }

    /// `island/`: the island's generated `extern "C"` header, C++ module and Rust bindings (shared by the
    /// variants, so `cargo mcpp build` and build.rs plan one argv).
    pub fn island_dir(&self) -> PathBuf {
        self.dir.join("island")
    }

    /// The variant of a build with accelerator set `accel`: `host` for the empty set, else the
    /// first 16 hex digits of the sha256 of the set's canonical text, so device and CPU
    /// variants never overwrite each other.
    pub fn variant(&self, accel: &AccelSet) -> Variant {
        let name = if accel.is_empty() { "host".to_string() } else { crate::engine::fingerprint::sha256_hex(accel.to_string().as_bytes())[..16].to_string() };
        Variant { dir: self.dir.join(name) }
    }
}

/// One variant of a package's device cache, `<cache>/<variant>/`: a build's outputs, its
/// fingerprints, its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    dir: PathBuf,
}

impl Variant {
    /// The directory itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `lock`: held by the device phase from before its first action to the written surface
    /// ([`crate::engine::lock`]).
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join("lock")
    }

    /// `surface-base`: the base directory the last generated surface was named by
    /// ([`crate::surface::note_base`]).
    pub fn surface_base(&self) -> PathBuf {
        self.dir.join("surface-base")
    }

    /// `surface/`: the generated C++ surface (interface, implementation unit, data headers)
    /// the host C++ lane compiles, mirrored from OUT_DIR's `mcpp/` so the files a compile reads
    /// are in the device cache (never watched by cargo: the build script writes them).
    pub fn surface_cpp_dir(&self) -> PathBuf {
        self.dir.join("surface")
    }

    /// `compile_commands.json`: the compilation database of the variant's translation units
    /// ([`crate::engine::compile_db`]).
    pub fn compile_commands(&self) -> PathBuf {
        self.dir.join(COMPILE_COMMANDS)
    }

    /// `fingerprints/`: the action graph's recorded state ([`crate::engine::graph`]).
    pub fn fingerprints_dir(&self) -> PathBuf {
        self.dir.join("fingerprints")
    }

    /// `fingerprints/file-hashes.json`: the hash cache of every file the actions read
    /// ([`crate::engine::fingerprint::load_hash_cache`]).
    pub fn hash_cache(&self) -> PathBuf {
        self.fingerprints_dir().join("file-hashes.json")
    }

    /// `fingerprints/<id>.<8 hex>.json`: the recorded state of the action `id` (its characters
    /// other than ASCII letters, digits, `.` and `-` written `_`, the hash keeping ids apart;
    /// an id longer than 200 characters keeps its last 200, so the name stays within the 255
    /// bytes a file system allows however deep or long the source's path is).
    pub fn action_record(&self, id: &str) -> PathBuf {
        let safe: String = id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
        let safe = &safe[safe.len().saturating_sub(200)..];
        let short = &crate::engine::fingerprint::sha256_hex(id.as_bytes())[..8];
        self.fingerprints_dir().join(format!("{safe}.{short}.json"))
    }

    /// `<lane>/`: a lane's outputs (`spirv`, `slang`, `cuda`, `cxx`).
    pub fn lane_dir(&self, lane: &str) -> PathBuf {
        self.dir.join(lane)
    }

    /// `<lane>/obj/`: an object lane's objects and depfiles.
    pub fn objects_dir(&self, lane: &str) -> PathBuf {
        self.lane_dir(lane).join("obj")
    }

    /// `<lane>/<kind>/`: a lane's outputs of one kind other than objects (`cuda/ptx/`,
    /// `cuda/cubin/`, `cuda/fatbin/`), so switching a source's output kind never finds another
    /// kind's bytes under its name.
    pub fn output_dir(&self, lane: &str, kind: &str) -> PathBuf {
        self.lane_dir(lane).join(kind)
    }

    /// `cxx/bmi/`: the host C++ lane's compiled module interfaces.
    pub fn bmi_dir(&self) -> PathBuf {
        self.lane_dir("cxx").join("bmi")
    }

    /// `cxx/module.map`: g++'s module mapper file (every module to its BMI).
    pub fn module_map(&self) -> PathBuf {
        self.lane_dir("cxx").join("module.map")
    }
}

/// The surface directory of a build script, its `OUT_DIR`: what the crate includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutDir {
    dir: PathBuf,
}

impl OutDir {
    /// The surface directory at `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> OutDir {
        OutDir { dir: dir.into() }
    }

    /// `mcpp_shaders.rs`: the Rust surface (`include!(concat!(env!("OUT_DIR"), "/mcpp_shaders.rs"))`).
    pub fn rust_surface(&self) -> PathBuf {
        self.dir.join("mcpp_shaders.rs")
    }

    /// `mcpp_kernels.rs`: the Rust bindings of the island's boundary.
    pub fn island_bindings(&self) -> PathBuf {
        self.dir.join("mcpp_kernels.rs")
    }

    /// `mcpp/`: the C++ surface (module or header, impl unit, data headers) and the island's
    /// header and module.
    pub fn cpp_dir(&self) -> PathBuf {
        self.dir.join("mcpp")
    }

    /// `mcpp/payloads/`: the verified payload copies `mcpp_shaders.rs` includes.
    pub fn payload_dir(&self) -> PathBuf {
        self.cpp_dir().join("payloads")
    }

    /// `mcpp-sidecars.json`: the sidecar payloads of this build for `cargo mcpp pack`
    /// (`{"version":1,"sidecars":[{"source":..,"relative":..}]}`, [`crate::surface::storage`]).
    pub fn sidecars_manifest(&self) -> PathBuf {
        self.dir.join("mcpp-sidecars.json")
    }

    /// The directory of the final artifacts (`target/<profile>/`, which holds `build/`), where
    /// sidecar payloads go beside the executable; `<OUT_DIR>/artifacts` when `OUT_DIR` is not
    /// under a `build` directory (a build driven by the library API with its own directories).
    pub fn artifact_dir(&self) -> PathBuf {
        match self.dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "build")).and_then(Path::parent) {
            Some(p) => p.to_path_buf(),
            None => self.dir.join("artifacts"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_cache_names_one_place_for_a_build_script_and_for_cargo_mcpp() {
        let out = Path::new("/t/target/debug/build/app-0123/out");
        let cache = DeviceCache::from_out_dir(out, "app");
        assert_eq!(cache, DeviceCache::in_profile(Path::new("/t/target/debug"), "app"));
        assert_eq!(cache.tool_decisions(), Path::new("/t/target/debug/mcpp/app/tool-decisions.json"));
        assert_eq!(DeviceCache::from_out_dir(Path::new("/elsewhere/out"), "app").dir(), Path::new("/elsewhere/out/mcpp-work"));
        assert!(cache.contains(&cache.island_dir()) && !cache.contains(out));
    }

    #[test]
    fn variants_are_host_or_a_hash_of_the_accelerator_set() {
        let cache = DeviceCache::at("/c");
        assert_eq!(cache.variant(&AccelSet::none()).dir(), Path::new("/c/host"));
        let v = cache.variant(&AccelSet::parse("vulkan1.2").unwrap());
        let name = v.dir().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.len() == 16 && name.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
        assert_ne!(v, cache.variant(&AccelSet::parse("vulkan1.3").unwrap()));
        assert_eq!(v.hash_cache(), v.dir().join("fingerprints/file-hashes.json"));
        // A 254-byte file name deep in directories: the record's name stays within 255 bytes.
        let long = format!("spirv:shaders/a/b/{}.comp", "x".repeat(254));
        let record = v.action_record(&long);
        assert!(record.file_name().unwrap().len() <= 255, "{}", record.display());
        assert_ne!(record, v.action_record(&format!("spirv:shaders/a/c/{}.comp", "x".repeat(254))));
        assert_eq!(v.objects_dir("cuda"), v.dir().join("cuda/obj"));
        let a = v.action_record("cuda:a/b.cu");
        assert!(a.starts_with(v.fingerprints_dir()) && a.file_name().unwrap().to_str().unwrap().starts_with("cuda_a_b.cu."), "{}", a.display());
        assert_ne!(a, v.action_record("cuda:a_b.cu"), "ids that flatten alike differ by the hash");
    }

    #[test]
    fn the_surface_directory_keeps_its_names() {
        let out = OutDir::at("/o");
        assert_eq!(out.rust_surface(), Path::new("/o/mcpp_shaders.rs"));
        assert_eq!(out.island_bindings(), Path::new("/o/mcpp_kernels.rs"));
        assert_eq!(out.payload_dir(), Path::new("/o/mcpp/payloads"));
    }
}
