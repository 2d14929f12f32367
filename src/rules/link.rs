//! What the object lanes (CUDA, host C++) share: object file names, the in-process archive of
//! a lane's objects (one static library per lane, [`crate::engine::archive`]) and the link directives
//! that put it, and the runtimes it needs, into the crate. A lane plans its compiles into
//! [`object_path`]s, then [`archive`]s them; the pipeline prints the directives of every lane,
//! in plan order, with [`print()`].

use crate::engine::archive::ArchiveFormat;
use crate::output::cargo_output::CargoOutput;
use crate::engine::graph::{Action, InProcess, Role};
use crate::engine::layout::Variant;
use std::path::{Path, PathBuf};

/// A link directive a plan asks for; the pipeline prints it through [`CargoOutput`] in plan
/// order (order matters to the linker), with [`print()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkDirective {
    /// `cargo::rustc-link-search=native=<dir>`.
    Search(PathBuf),
    /// `cargo::rustc-link-lib=<spec>`, e.g. `static=mcpp_cuda_app` or `dylib=stdc++`.
    Lib(String),
    /// `cargo::rustc-link-arg=<arg>`, e.g. `-Wl,-rpath,<dir>` for a shared runtime.
    Arg(String),
}

/// A file name for an object of `rel` (a package-relative source name): readable, and unique
/// per path (`a/b.cu` and `a_b.cu` differ by the 8 hex digits of the hash of `rel`), so
/// archive members never collide: `a_b.cu.1a2b3c4d.o` for `ext` `o`.
pub fn object_name(rel: &str, ext: &str) -> String {
    let flat: String = rel.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
    format!("{flat}.{}.{ext}", &crate::engine::fingerprint::sha256_hex(rel.as_bytes())[..8])
}

/// Where `lane` writes the object of `rel`: `<variant>/<lane>/obj/<`[`object_name`]`>`; its
/// depfile is the same path with the extension `d`.
pub fn object_path(variant: &Variant, lane: &str, rel: &str) -> PathBuf {
    variant.objects_dir(lane).join(object_name(rel, "o"))
}

/// The static library of `lane` for `package`: `mcpp_<lane>_<package as an identifier>`
/// (`mcpp_cuda_app`, `mcpp_cxx_my_app`).
pub fn lib_name(lane: &str, package: &str) -> String {
    format!("mcpp_{lane}_{}", crate::surface::names::identifier(package, "package"))
}

/// Plan the archive of `objects` (indices `deps` in the caller's action list), written in
/// process ([`crate::engine::archive`]) as `<variant>/<lane>/lib-<12 hex of the member list>/lib<name>.a`
/// with `name` the [`lib_name`] of `lane` and `package`: a new member list gets a new archive
/// directory. Returns the action and the link directives (search the directory, link the
/// library statically).
pub fn archive(variant: &Variant, lane: &str, package: &str, format: ArchiveFormat, objects: &[PathBuf], deps: Vec<usize>, cwd: &Path) -> (Action, Vec<LinkDirective>) {
    let name = lib_name(lane, package);
    let list: String = objects.iter().map(|o| o.to_string_lossy().into_owned()).collect::<Vec<_>>().join("\n");
    let lib_dir = variant.lane_dir(lane).join(format!("lib-{}", &crate::engine::fingerprint::sha256_hex(list.as_bytes())[..12]));
    let lib = lib_dir.join(format!("lib{name}.a"));
    let mut action = Action::in_process(InProcess {
        id: format!("archive:{name}"),
        description: format!("archive lib{name}.a ({} objects)", objects.len()),
        role: Role::Object,
        step: std::sync::Arc::new(ArchiveStep(format)),
        cwd: cwd.to_path_buf(),
        inputs: objects.to_vec(),
        outputs: vec![lib],
        expect: None,
    });
    action.deps = deps;
    (action, vec![LinkDirective::Search(lib_dir), LinkDirective::Lib(format!("static={name}"))])
}

/// The C++ runtime of the host toolchain (`dylib=stdc++`, `dylib=c++`; none for MSVC), which
/// an archive of C++ objects needs, and nvcc's host stub too (`__cxa_guard_acquire`).
pub fn cpp_runtime(host: &crate::rules::host::HostToolchain) -> Option<LinkDirective> {
    host.cpp_stdlib.as_ref().map(|std| LinkDirective::Lib(format!("dylib={std}")))
}

/// Print `directives` as cargo directives, in order.
pub fn print(cargo: &mut CargoOutput, directives: &[LinkDirective]) {
    for l in directives {
        match l {
            LinkDirective::Search(dir) => cargo.link_search(dir),
            LinkDirective::Lib(spec) => cargo.link_lib(spec),
            LinkDirective::Arg(arg) => cargo.link_arg(arg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_named_apart_and_archived_under_their_member_list() {
        assert_ne!(object_name("a/b.cu", "o"), object_name("a_b.cu", "o"));
        assert!(object_name("a/b.cu", "o").starts_with("a_b.cu.") && object_name("a/b.cu", "o").ends_with(".o"));
        let variant = crate::engine::layout::DeviceCache::at("/c").variant(&crate::config::accel::AccelSet::none());
        let o = object_path(&variant, "cuda", "k/x.cu");
        assert!(o.starts_with("/c/host/cuda/obj"), "{}", o.display());
        let (a, link) = archive(&variant, "cxx", "my-app", ArchiveFormat::Gnu, std::slice::from_ref(&o), vec![0], Path::new("/p"));
        assert_eq!(a.id, "archive:mcpp_cxx_my_app");
        assert_eq!(a.outputs[0].file_name().unwrap(), "libmcpp_cxx_my_app.a");
        assert_eq!(link[1], LinkDirective::Lib("static=mcpp_cxx_my_app".into()));
        let LinkDirective::Search(dir) = &link[0] else { panic!("{link:?}") };
        assert!(dir.starts_with("/c/host/cxx") && a.outputs[0].starts_with(dir));
        let (b, _) = archive(&variant, "cxx", "my-app", ArchiveFormat::Gnu, &[o.clone(), o], vec![0], Path::new("/p"));
        assert_ne!(a.outputs, b.outputs, "a new member list, a new archive directory");
        let mut cargo = CargoOutput::default();
        print(&mut cargo, &link);
        assert_eq!(cargo.lines().len(), 2);
    }
}

/// The archive of a lane's objects as a graph step ([`crate::engine::graph::Step`]): the action's
/// inputs, in order, written as the archive at its one output by [`crate::engine::archive::write`].
/// It lives here, over the graph, so the writer (`archive.rs`) stays below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveStep(pub ArchiveFormat);

impl crate::engine::graph::Step for ArchiveStep {
    fn name(&self) -> &str {
        "archive writer"
    }
    fn version(&self) -> String {
        crate::engine::archive::writer_identity(self.0)
    }
    fn options(&self) -> String {
        format!("{:?}", self.0)
    }
    fn run(&self, inputs: &[PathBuf], outputs: &[PathBuf]) -> crate::error::Result<Vec<String>> {
        match outputs {
            [lib] => crate::engine::archive::write(self.0, inputs, lib).map(|()| Vec::new()),
            _ => Err(crate::error::Error::new(crate::error::ErrorKind::ToolFailed, "an archive step has exactly one output")),
        }
    }
}
